"""docker-compose.yml and the Dockerfiles: what a run cannot show.

``./run compose check`` builds every image and runs the cluster and the workshop
container for real (lockshop/compose/check.py). It runs with its own base, its own
admin token and 127.0.0.1 set explicitly, so the defaults a user gets are checked
here: the public base, no admin token that a published port would accept by default,
ports on 127.0.0.1. So is what a run would not notice: a variable the app does not
read (ignored in silence), Redlock's servers being one, a shop served otherwise than
the launcher serves it. And the check's own refusals that need no Docker.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from helpers import wait_for
from lockshop.cluster.launcher import gunicorn_arguments
from lockshop.cluster.processes import free_port
from lockshop.compose import base_image, check, engine, images
from lockshop.console.launch import INSTANCE_APP
from shop.config import PREFIX, Config
from shop.i18n import _

ROOT = Path(__file__).resolve().parent.parent
SHOPS = ["shop-1", "shop-2", "shop-3"]
DOCKERFILES = [ROOT / "Dockerfile", *sorted((ROOT / "deploy").glob("*/Dockerfile"))]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def resolve(value: str) -> str:
    """${NAME:-default} as compose resolves it with NAME unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def shop_environment(services, name: str, token: str = "a-secret") -> dict[str, str]:
    environment = {k: resolve(str(v)) for k, v in services[name]["environment"].items()}
    environment["LOCKSHOP_ADMIN_TOKEN"] = token
    return environment


def test_the_admin_token_has_no_default_anywhere(services):
    """compose refuses to start (``${NAME:?message}``) rather than publish a guessable one."""
    tokens = {name: service["environment"]["LOCKSHOP_ADMIN_TOKEN"]
              for name, service in services.items()
              if "LOCKSHOP_ADMIN_TOKEN" in service.get("environment", {})}
    assert set(tokens) >= {*SHOPS, "locust-master", "locust-worker", "workshop"}
    for name, value in tokens.items():
        assert re.fullmatch(r"\$\{LOCKSHOP_ADMIN_TOKEN:\?[^}]+\}", value), (name, value)


def test_every_published_port_is_on_127_0_0_1_by_default(services):
    published = [port for service in services.values() for port in service.get("ports", [])]
    assert len(published) == 6  # proxy, Locust's web UI, the workshop's three and its room
    for port in published:
        assert resolve(port).startswith("127.0.0.1:"), port


def test_every_image_is_built_from_the_public_base_by_default():
    for dockerfile in DOCKERFILES:
        text = dockerfile.read_text()
        assert "ARG BASE=debian:bookworm-slim" in text, dockerfile
        bases = [f for f in re.findall(r"^FROM (\S+)", text, re.M) if f not in ("python", "shop")]
        assert bases == ["${BASE}"], dockerfile


def test_every_service_is_built_here_or_reuses_an_image_built_here(services):
    built = {s["image"] for s in services.values() if "build" in s}
    for name, service in services.items():
        assert service["image"] in built, name
    assert [b.image for b in images.image_builds(ROOT / "docker-compose.yml")] == [
        "lockshop-proxy", "lockshop-shop", "lockshop-postgres", "lockshop-redis",
        "lockshop-zookeeper", "lockshop-workshop"]  # the shop stage before the workshop's


@pytest.mark.parametrize("shop", SHOPS)
def test_shop_environment_is_what_config_reads(services, shop):
    environment = shop_environment(services, shop)
    known = {PREFIX + f.name.upper() for f in fields(Config)}
    assert set(environment) <= known, set(environment) - known
    assert Config.from_env(environment).instance == shop  # parses, with no value refused


def test_redlock_has_five_servers_of_its_own(services):
    config = Config.from_env(shop_environment(services, "shop-1"))
    hosts = [u.split("//")[1].split(":")[0] for u in config.redis_urls]
    assert sorted(hosts) == [f"redlock-{n}" for n in range(1, 6)]
    assert config.redis_url not in config.redis_urls
    redlock = [services[h] for h in hosts]
    assert all(s["image"] == "lockshop-redis" for s in redlock)


def test_shops_and_the_image_serve_as_the_launcher_does(services):
    launcher = ["gunicorn", *gunicorn_arguments("0.0.0.0:8000", 16, INSTANCE_APP)]
    for shop in SHOPS:
        assert services[shop]["command"] == launcher
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*?\])\s*$", dockerfile, re.M | re.S).group(1)
    assert yaml.safe_load(cmd.replace("\\\n", " ")) == launcher


def test_the_check_finds_the_room_line_lockshop_up_prints():
    # As lockshop.cli.commands._say_what_runs prints it, behind compose's "name | ".
    line = "room: http://172.18.0.2:8090/room/    " + _("(code %(code)s)", code="K7QX2M")
    logs = f"workshop_1  | lockshop: 3 instances on sqlite\nworkshop_1  | {line}\n"
    assert check.ROOM_LINE.search(logs).group(1) == "K7QX2M"


def test_a_second_check_is_refused_while_one_runs(tmp_path):
    first, second = engine.Engine(tmp_path), engine.Engine(tmp_path)
    first._take_the_lock()
    try:
        with pytest.raises(engine.EngineError, match="another compose check is running"):
            second._take_the_lock()
    finally:
        first.close()
    second._take_the_lock()  # free again once the first has ended
    second.close()


def test_missing_docker_without_apt_is_one_line(monkeypatch):
    monkeypatch.setattr(engine, "PACKAGES", {"docker.io": "/nonexistent/dockerd"})
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(engine.EngineError) as refused:
        engine.install_missing()
    assert "no apt-get" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.skipif(not Path(engine.DOCKERD).exists() or os.geteuid() != 0,
                    reason="needs Debian's docker.io and root (./run compose check installs it)")
def test_a_daemon_that_cannot_start_is_one_line_and_leaves_nothing_running(tmp_path):
    (tmp_path / "exec").write_text("a file where the daemon's exec root should be")
    daemon = engine.Engine(tmp_path)
    with pytest.raises(engine.EngineError) as refused:
        daemon.__enter__()
    said = str(refused.value)
    assert said.startswith("the Docker daemon could not start") and "\n" not in said, said
    assert daemon.process is None and not daemon.socket.exists()
    pid = int((tmp_path / "dockerd.pid").read_text()) if (tmp_path / "dockerd.pid").exists() \
        else None
    assert pid is None or not Path(f"/proc/{pid}").exists()
    mounts = Path("/proc/self/mounts").read_text()
    assert str(tmp_path.resolve()) + "/" not in mounts  # its data root, bound, unmounted
    daemon._take_the_lock()  # and the lock was given back
    daemon.close()


# --- the check's own faults, each one line (no Docker needed) -------------------------------

def a_process(tmp_path: Path, argv0: str, *arguments: str) -> subprocess.Popen:
    """A process that sleeps, whose command line reads ``argv0 arguments...`` in /proc.

    Popen returns once the child's exec has closed its pipe, which the kernel does
    before it lays out the new command line: for a moment /proc shows an empty one,
    and a busy machine made that moment long enough for the check to read it (seen in
    CI). A leftover daemon has long finished its exec, so the test waits for it too."""
    process = subprocess.Popen([argv0, "-c", "import time; time.sleep(60)", *arguments],
                               executable=sys.executable, cwd=tmp_path)
    cmdline = Path(f"/proc/{process.pid}/cmdline")
    try:
        wait_for(lambda: cmdline.read_bytes().split(b"\0")[0] == argv0.encode(),
                 message=f"the process's command line to read {argv0}")
    except BaseException:
        process.kill()
        raise
    return process


@pytest.mark.parametrize("command", [
    pytest.param(["/bin/sleep"], id="any-process"),
    pytest.param([engine.DOCKERD, "--data-root", "/var/lib/docker"], id="another-dockerd"),
])
def test_a_pid_file_naming_another_process_signals_nothing(tmp_path, command):
    """After a reboot, or with a system Docker beside it, the pid is not our daemon's."""
    stranger = a_process(tmp_path, *command)
    try:
        (tmp_path / "dockerd.pid").write_text(f"{stranger.pid}\n")
        engine.Engine(tmp_path)._stop_a_leftover()
        assert stranger.poll() is None  # not signalled
        assert not (tmp_path / "dockerd.pid").exists()  # dockerd would refuse to start
    finally:
        stranger.kill()
        stranger.wait()


def test_a_leftover_daemon_on_our_data_root_is_stopped(tmp_path):
    leftover = a_process(tmp_path, engine.DOCKERD, "--host", f"unix://{tmp_path}/docker.sock",
                         "--data-root", str(tmp_path / "data"))
    try:
        (tmp_path / "dockerd.pid").write_text(f"{leftover.pid}\n")
        engine.Engine(tmp_path)._stop_a_leftover()
        assert leftover.wait(timeout=5) == -signal.SIGTERM
        assert not (tmp_path / "dockerd.pid").exists()
    finally:
        leftover.kill()
        leftover.wait()


def test_the_folder_is_made_for_its_user_alone(tmp_path):
    folder = tmp_path / "var-tmp" / "lockshop-compose"
    assert engine.private_folder(folder) == folder.resolve()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    engine.private_folder(folder)  # made before: accepted as it is


def test_a_folder_others_can_write_in_is_refused_before_anything_runs(tmp_path, monkeypatch):
    folder = tmp_path / "lockshop-compose"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("LOCKSHOP_COMPOSE_DIR", str(folder))
    monkeypatch.setattr(check, "install_missing", lambda: pytest.fail("the check ran"))
    with pytest.raises(engine.EngineError) as refused:
        check.run_check(ROOT)
    said = str(refused.value)
    assert said.startswith(f"{folder} can be written by other users (mode 777)"), said
    assert "\n" not in said


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
@pytest.mark.parametrize("made_by_another", ["folder", "link"])
def test_a_folder_of_another_user_is_refused(tmp_path, made_by_another):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    folder = tmp_path / "lockshop-compose"
    if made_by_another == "folder":
        folder = theirs
    else:  # their link, in a world-writable parent, to a folder of ours
        folder.symlink_to(tmp_path)
    os.lchown(folder, 65534, 65534)
    with pytest.raises(engine.EngineError, match="belongs to another user"):
        engine.private_folder(folder)


def fake_program(tmp_path: Path, name: str, script: str) -> str:
    program = tmp_path / "bin" / name
    program.parent.mkdir(exist_ok=True)
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    return str(program)


def test_a_docker_client_that_hangs_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "DOCKER", fake_program(tmp_path, "docker", "exec sleep 30"))
    with pytest.raises(engine.EngineError) as refused:
        engine.Engine(tmp_path).docker("version", timeout=0.3)
    assert str(refused.value) == "docker version did not answer in 0.3 s"


def test_a_daemon_whose_client_hangs_is_one_line_and_is_stopped(tmp_path, monkeypatch):
    """``docker version`` timing out as the daemon starts is no answer yet, then one line;
    the daemon is stopped."""
    # A daemon that makes its socket (the path after --host) and does nothing else.
    monkeypatch.setattr(engine, "DOCKERD", fake_program(
        tmp_path, "dockerd", 'while [ "$1" != --host ]; do shift; done\n'
                             'touch "${2#unix://}"\nexec sleep 60'))
    monkeypatch.setattr(engine, "DOCKER", fake_program(tmp_path, "docker", "exec sleep 30"))
    monkeypatch.setattr(engine, "PROBE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(engine, "START_TIMEOUT_S", 1)
    monkeypatch.setattr(engine, "_share_the_cpu", lambda: None)  # the machine's cgroups
    folder = tmp_path / "compose"
    daemon = engine.Engine(folder)
    with pytest.raises(engine.EngineError) as refused:
        daemon.__enter__()
    said = str(refused.value)
    assert said.startswith("the Docker daemon did not answer in 1 s") and "\n" not in said
    assert daemon.process is None and not daemon.socket.exists()


def test_docker_compose_that_hangs_fails_its_step_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "COMPOSE", fake_program(tmp_path, "docker-compose",
                                                       "exec sleep 30"))
    compose = check.Compose(engine.Engine(tmp_path), check.Run(project=ROOT, runtime=tmp_path))
    with pytest.raises(check.StepFailed) as failed:
        compose("up", "--detach", timeout=0.3)
    assert str(failed.value) == "docker-compose up did not finish in 0.3 s"


def test_a_shop_that_does_not_answer_fails_its_step_in_one_line(tmp_path):
    port = free_port()  # nothing listens there
    shop = check.Shop(check.Run(project=ROOT, runtime=tmp_path,
                                ports={"LOCKSHOP_HTTP_PORT": port}))
    with pytest.raises(check.StepFailed) as failed:
        shop._admin("get", "/api/admin/audit")
    assert str(failed.value) == (f"GET http://127.0.0.1:{port}/api/admin/audit got no "
                                 "answer (ConnectionError)")


def test_a_request_that_times_out_fails_its_step_in_one_line():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/stats/requests"
        with pytest.raises(check.StepFailed) as failed:
            check.Http().get(url, timeout=0.3)
    assert str(failed.value) == f"GET {url} got no answer (ReadTimeout)"


def test_the_base_is_imported_with_the_engines_docker_client(tmp_path, monkeypatch):
    """Debian's client, as the engine and the images use it: one place names it."""
    called = tmp_path / "called"
    monkeypatch.setattr(base_image, "DOCKER", fake_program(
        tmp_path, "docker", f'echo "$@" > {called}; cat > /dev/null'))
    (tmp_path / f"debian-{base_image.SUITE}.tar").write_bytes(b"a rootfs")

    class NoImageYet(engine.Engine):
        def docker(self, *arguments, check=True, timeout=None):
            return subprocess.CompletedProcess(arguments, 1, "", "no such image")

    assert base_image.ensure_base(NoImageYet(tmp_path), tmp_path) == "imported"
    assert called.read_text() == f"import - {base_image.IMAGE}\n"
