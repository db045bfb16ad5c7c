"""``lockshop compose check``: docker-compose.yml built and run for real, and the whole
workshop in one container, checked through the published ports only, as a user would.

The steps, each printed with its time (cold: the base and the images made; warm: cached):

1. a Docker daemon of its own (``engine.py``), the Debian base (``base_image.py``) and
   every image of the compose file (``images.py``);
2. ``docker-compose up``: the proxy, three shops on PostgreSQL, Redis, Redlock's five
   servers, a three-node ZooKeeper ensemble, a Locust master with two workers;
3. a sale per strategy through Locust's web API (port 8089: the master and its two
   workers, buying through the proxy), each read from the shops' audit and holds through
   the proxy (port 8080): ``none`` oversells; ``redis``, ``redlock`` and ``zk_fair`` sell
   exactly the stock, and all three shops took the lock;
4. under ``zk_fair``, ``docker-compose kill`` of one shop and one ZooKeeper node mid-sale:
   nothing oversold, and every request that could not be served a 503;
5. ``docker-compose down -v``: no container, network or volume of the project is left;
6. the workshop container (``--profile workshop``): ``lockshop up --host 0.0.0.0`` with
   its own servers; the console, the instances and the room answer on the host's ports,
   and the room grades a right and a wrong lock in its sandbox, in the container.

Guarantees: whatever happens (a failed step, Ctrl-C, SIGTERM), the project's containers,
networks and volumes are removed and the daemon is stopped. A fault before a step can
run (no Docker to be had, a folder another user could write in, a daemon that cannot
start, a port taken, a build that fails, a second check) is ``EngineError``: one line,
exit 2. A step whose result is wrong, or that got no answer in time (docker-compose, a
shop, Locust, the room), makes the check exit 1, having said which and why.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

from lockshop.cluster.processes import port_is_free
from lockshop.compose import base_image, images
from lockshop.compose.engine import (COMPOSE, Engine, EngineError, install_missing,
                                     private_folder)
from shop.i18n import _

#: The compose project's name: the check's containers never mix with a user's own.
PROJECT_NAME = "lockshop-check"
#: Published ports (the compose file's variables and defaults).
PORTS = {"LOCKSHOP_HTTP_PORT": 8080, "LOCKSHOP_LOCUST_PORT": 8089,
         "LOCKSHOP_WORKSHOP_PORT": 8000, "LOCKSHOP_WORKSHOP_PORT_2": 8001,
         "LOCKSHOP_WORKSHOP_PORT_3": 8002, "LOCKSHOP_ROOM_PORT": 8090}
STRATEGIES_THAT_HOLD = ("redis", "redlock", "zk_fair")
SHOPS = ("shop-1", "shop-2", "shop-3")
#: A sale: this many buyers, spread by the master over its two workers, for this long
#: once every buyer is in.
BUYERS = 24
SALE_S = 8
#: How long the cluster, Locust's workers and the workshop may take to answer.
READY_TIMEOUT_S = 240
GRADING_TIMEOUT_S = 300


class StepFailed(RuntimeError):
    """A step ran and its result is wrong (exit 1)."""


@dataclass
class Run:
    """The check's settings and what it has measured."""

    project: Path
    runtime: Path
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    ports: dict[str, int] = field(default_factory=dict)
    times: list[tuple[str, float]] = field(default_factory=list)

    def url(self, port: str, path: str = "") -> str:
        return f"http://127.0.0.1:{self.ports[port]}{path}"

    def timed(self, name: str, step: Callable[[], str | None]) -> None:
        print(_("compose check: %(step)s ...", step=name), flush=True)
        started = time.monotonic()
        said = step()
        seconds = time.monotonic() - started
        self.times.append((name, seconds))
        print(f"  {seconds:6.1f} s  " + (said or _("done")), flush=True)


def run_check(project: Path) -> int:
    """The whole check; 0 if every step did what it should, 1 if one did not."""
    # LOCKSHOP_COMPOSE_DIR: a folder kept across clones (CI's), so that a fresh clone
    # finds the base and the images' layers already made.
    runtime = Path(os.environ.get("LOCKSHOP_COMPOSE_DIR") or project / ".lockshop" / "compose")
    # Checked before anything runs, and as named: a link in its place is resolved after.
    run = Run(project=project, runtime=private_folder(runtime),
              ports={name: _port(name, default) for name, default in PORTS.items()})
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _interrupt)  # cleaned up as on Ctrl-C
    try:
        run.timed(_("Debian's docker.io, docker-compose and debootstrap"),
                  lambda: _("installed %(packages)s", packages=", ".join(installed))
                  if (installed := install_missing()) else _("already installed"))
        with Engine(run.runtime) as engine:
            compose = Compose(engine, run)
            try:
                _steps(run, engine, compose)
            except StepFailed as failure:
                print(_("compose check: FAILED: %(why)s", why=failure), flush=True)
                print(_("  every container's log: %(path)s", path=compose.save_logs()),
                      flush=True)
                # A fixed line a CI reads in any language, as pytest's closing line.
                print(f"compose: {len(run.times)} passed, 1 failed", flush=True)
                return 1
            finally:
                compose.down_quietly()
    finally:
        signal.signal(signal.SIGTERM, previous)
    total = time.monotonic() - started
    print(_("compose check: every step passed in %(seconds)s s", seconds=f"{total:.0f}"))
    print(f"compose: {len(run.times)} passed, 0 failed")
    return 0


def _interrupt(_signal, _frame) -> None:
    raise KeyboardInterrupt


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise EngineError(_("%(name)s must be a port number, got %(raw)r", name=name, raw=raw))
    return int(raw)


def _steps(run: Run, engine: Engine, compose: Compose) -> None:
    compose_file = run.project / "docker-compose.yml"
    run.timed(_("the base image (debootstrap, docker import)"),
              lambda: base_image.ensure_base(engine, run.runtime / "base"))
    # Where the shop's Dockerfile looks, in its build context (wherever the runtime is).
    images.stage_certificates(run.project / ".lockshop" / "compose" / "certificates")
    for build in images.image_builds(compose_file):
        run.timed(_("image %(image)s", image=build.image), lambda build=build: (
            images.build(engine, build, base_image.IMAGE, run.runtime / "logs"),
            _("%(size)s MB", size=f"{images.size_mb(engine, build.image):.0f}"))[1])
    _refuse_taken_ports(run, ["LOCKSHOP_HTTP_PORT", "LOCKSHOP_LOCUST_PORT"])
    run.timed(_("docker-compose up (every service healthy)"), lambda: compose.up_cluster())
    shop = Shop(run)
    run.timed(_("the shops and Locust's two workers answer"), shop.wait_until_ready)
    for strategy in ("none", *STRATEGIES_THAT_HOLD):
        run.timed(_("a sale under %(strategy)s", strategy=strategy),
                  lambda strategy=strategy: shop.sale(strategy))
    run.timed(_("a sale under zk_fair, one shop and one ZooKeeper node killed"),
              lambda: shop.sale("zk_fair", fault=lambda: compose.kill("shop-2", "zk3")))
    run.timed(_("docker-compose down -v"), compose.down_and_count)
    _refuse_taken_ports(run, [p for p in PORTS if p.startswith(("LOCKSHOP_WORKSHOP",
                                                                 "LOCKSHOP_ROOM"))])
    workshop = Workshop(run, compose)
    run.timed(_("the workshop container (lockshop up)"), workshop.start)
    run.timed(_("the room grades a right and a wrong lock"), workshop.grade)
    run.timed(_("docker-compose down -v (the workshop)"), compose.down_and_count)


def _refuse_taken_ports(run: Run, names: list[str]) -> None:
    for name in names:
        if not port_is_free(run.ports[name]):
            raise EngineError(_("port %(port)s is taken on this machine; free it, or choose "
                                "another with %(name)s=PORT", port=run.ports[name], name=name))


# --- compose ------------------------------------------------------------------------------

class Compose:
    """docker-compose (Debian's 1.29) on the project's file, against the check's daemon."""

    def __init__(self, engine: Engine, run: Run):
        self.engine = engine
        self.run = run
        self.env = dict(engine.env, BASE=base_image.IMAGE, LOCKSHOP_ADMIN_TOKEN=run.token,
                        LOCKSHOP_BIND="127.0.0.1",
                        **{name: str(port) for name, port in run.ports.items()})

    def __call__(self, *arguments: str, timeout: float = 1200) -> str:
        command = [COMPOSE, "--project-name", PROJECT_NAME, "--file",
                   str(self.run.project / "docker-compose.yml"), *arguments]
        try:
            done = subprocess.run(command, env=self.env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StepFailed(_("docker-compose %(command)s did not finish in %(seconds)s s",
                               command=arguments[0], seconds=f"{timeout:g}")) from None
        if done.returncode != 0:
            said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            # compose ends with "Encountered errors ..."; the reason is its last ERROR line.
            said = [line for line in said if line.startswith("ERROR")] or said
            raise StepFailed(_("docker-compose %(command)s failed: %(said)s",
                               command=arguments[0], said=said[-1] if said else done.returncode))
        return done.stdout

    def up_cluster(self) -> str:
        try:
            self("up", "--detach", "--no-build")
        except StepFailed as failure:
            if "already allocated" in str(failure) or "address already in use" in str(failure):
                raise EngineError(str(failure)) from None
            raise
        running = self("ps", "--services", "--filter", "status=running").split()
        return _("%(count)s containers running", count=len(self._containers()))\
            + f" ({len(set(running))} services)"

    def kill(self, *services: str) -> None:
        self("kill", *services)

    def down_and_count(self) -> str:
        self("--profile", "workshop", "down", "--volumes", "--remove-orphans", "--timeout", "5")
        left = self._leftovers()
        if left:
            raise StepFailed(_("docker-compose down -v left %(what)s", what=", ".join(left)))
        return _("no container, network or volume of %(project)s is left",
                 project=PROJECT_NAME)

    def save_logs(self) -> Path:
        """Every container's log, kept in the runtime folder before ``down`` removes them."""
        path = self.run.runtime / "logs" / "compose.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.write_text(self("--profile", "workshop", "logs", "--no-color",
                                 "--timestamps", timeout=120))
        except (StepFailed, OSError) as error:
            path.write_text(f"{error}\n")
        return path

    def down_quietly(self) -> None:
        """Whatever is left, removed; never raises (it runs on the way out)."""
        try:
            self("--profile", "workshop", "down", "--volumes", "--remove-orphans",
                 "--timeout", "2", timeout=180)
        except (StepFailed, OSError):
            pass

    def _containers(self) -> list[str]:
        return self.engine.docker("ps", "--quiet", "--filter",
                                  f"label=com.docker.compose.project={PROJECT_NAME}"
                                  ).stdout.split()

    def _leftovers(self) -> list[str]:
        label = f"label=com.docker.compose.project={PROJECT_NAME}"
        found = []
        for kind, listing in (("containers", ["ps", "--all", "--quiet"]),
                              ("networks", ["network", "ls", "--quiet"]),
                              ("volumes", ["volume", "ls", "--quiet"])):
            ids = self.engine.docker(*listing, "--filter", label).stdout.split()
            if ids:
                found.append(f"{len(ids)} {kind}")
        return found


# --- the shops, through the proxy, and Locust, through its web API ---------------------------

class Http(requests.Session):
    """A requests session whose request that gets no answer (refused, reset, timed out)
    is ``StepFailed``: the step failed, said in one line naming the URL."""

    def request(self, method: str, url: str, *arguments, **options) -> requests.Response:
        try:
            return super().request(method, url, *arguments, **options)
        except requests.RequestException as error:
            raise StepFailed(_("%(method)s %(url)s got no answer (%(error)s)",
                               method=method.upper(), url=url,
                               error=type(error).__name__)) from None


class Shop:
    def __init__(self, run: Run):
        self.run = run
        self.http = Http()
        self.admin = {"Authorization": f"Bearer {run.token}"}

    def shop(self, path: str) -> str:
        return self.run.url("LOCKSHOP_HTTP_PORT", path)

    def locust(self, path: str) -> str:
        return self.run.url("LOCKSHOP_LOCUST_PORT", path)

    def wait_until_ready(self) -> str:
        seen: set[str] = set()
        workers = 0

        def ready() -> bool:
            nonlocal workers
            answer = self._get(self.shop("/api/health"))
            if answer is not None:
                seen.add(answer["instance"])
            stats = self._get(self.locust("/stats/requests"))
            workers = stats.get("worker_count", 0) if stats else 0
            return seen >= set(SHOPS) and workers == 2

        _wait(ready, READY_TIMEOUT_S, lambda: _(
            "the cluster was not ready in %(seconds)s s: instances answering %(seen)s, "
            "Locust workers %(workers)s", seconds=READY_TIMEOUT_S,
            seen=sorted(seen) or "-", workers=workers))
        return _("%(shops)s answer through the proxy; Locust's master has 2 workers",
                 shops=", ".join(sorted(seen)))

    def sale(self, strategy: str, fault: Callable[[], None] | None = None) -> str:
        self._admin("put", "/api/admin/settings", {"strategy": strategy})
        self._admin("post", "/api/admin/reset", {})
        since = time.time()
        swarm = self._ok(self.http.post(self.locust("/swarm"), data={
            "user_count": BUYERS, "spawn_rate": BUYERS, "host": "http://proxy"}, timeout=30))
        if not swarm.json().get("success"):
            raise StepFailed(_("Locust refused the sale: %(message)s",
                               message=swarm.json().get("message")))
        _wait(lambda: self._locust_state() == "running", READY_TIMEOUT_S,
              lambda: _("Locust did not start the sale: %(state)s",
                        state=self._locust_state()))
        opened = time.monotonic()
        if fault is not None:
            # Mid-sale: once orders are being taken, a third of the way in.
            _wait(lambda: self._orders_so_far() > 0, SALE_S * 4,
                  lambda: _("no order was taken before the fault"))
            time.sleep(max(0.0, opened + SALE_S / 3 - time.monotonic()))
            fault()
        time.sleep(max(0.0, opened + SALE_S - time.monotonic()))
        self._ok(self.http.post(self.locust("/stop"), timeout=30))
        _wait(lambda: self._locust_state() == "stopped", 60,
              lambda: _("Locust did not stop: %(state)s", state=self._locust_state()))
        stats = self._ok(self.http.get(self.locust("/stats/requests"), timeout=30)).json()
        audit = self._admin("get", "/api/admin/audit")
        return self._judge(strategy, stats, audit, since, fault is not None)

    def _judge(self, strategy: str, stats: dict, audit: dict, since: float,
               faulted: bool) -> str:
        totals = audit["totals"]
        requests_made = sum(row["num_requests"] for row in stats["stats"]
                            if row["name"] != "Aggregated")
        figures = _("%(requests)s requests, sold %(sold)s of %(initial)s, oversold "
                    "%(oversold)s", requests=requests_made, sold=totals["sold"],
                    initial=totals["initial"], oversold=totals["oversold"])
        if totals["sold"] == 0:
            raise StepFailed(_("%(strategy)s: nothing was sold (%(figures)s)",
                               strategy=strategy, figures=figures))
        if strategy == "none":
            if totals["oversold"] <= 0:
                raise StepFailed(_("none: the three shops did not oversell (%(figures)s)",
                                   figures=figures))
            return figures
        if not audit["correct"]:
            raise StepFailed(_("%(strategy)s: the audit is not correct: %(figures)s, lost "
                               "updates %(lost)s, double-booked seats %(seats)s",
                               strategy=strategy, figures=figures, lost=totals["lost_updates"],
                               seats=totals["double_booked_seats"]))
        if faulted:
            return figures + "; " + self._unavailable_only(stats)
        holders = self._holders(since)
        if set(holders) != set(SHOPS) or not all(holders.values()):
            raise StepFailed(_("%(strategy)s: not every shop took the lock: %(holds)s",
                               strategy=strategy, holds=holders))
        return figures + "; " + _("holds %(holds)s", holds=", ".join(
            f"{name} {count}" for name, count in sorted(holders.items())))

    def _unavailable_only(self, stats: dict) -> str:
        """Every failure a 503 (said by a shop, or by the proxy for a shop that is gone)."""
        unavailable, other = 0, []
        for error in stats.get("errors", []):
            if "503" in error["error"]:
                unavailable += error["occurrences"]
            else:
                other.append(f"{error['occurrences']} x {error['name']}: {error['error']}")
        if other:
            raise StepFailed(_("failures that are not a 503: %(failures)s",
                               failures="; ".join(other)[:400]))
        return _("%(count)s requests answered 503, none failed otherwise", count=unavailable)

    def _holders(self, since: float) -> dict[str, int]:
        """Each shop's holds since ``since``, asked through the proxy (round robin: three
        requests in a row reach the three shops; asked again until each has answered)."""
        holders: dict[str, int] = {}
        for _attempt in range(12):
            answer = self._ok(self.http.get(self.shop(f"/api/locks/holds?since={since}"),
                                            timeout=30)).json()
            holders[answer["instance"]] = len(answer["holds"])
            if set(holders) >= set(SHOPS):
                break
        return holders

    def _orders_so_far(self) -> int:
        stats = self._get(self.locust("/stats/requests")) or {}
        return sum(row["num_requests"] for row in stats.get("stats", [])
                   if row["name"].startswith("/api/orders ["))

    def _locust_state(self) -> str:
        stats = self._get(self.locust("/stats/requests"))
        return stats.get("state", "?") if stats else "?"

    def _admin(self, method: str, path: str, body: dict | None = None) -> dict:
        answer = self.http.request(method, self.shop(path), json=body, headers=self.admin,
                                   timeout=60)
        return self._ok(answer).json()

    def _get(self, url: str) -> dict | None:
        try:
            answer = self.http.get(url, timeout=5)
        except StepFailed:
            return None  # not yet: asked again
        return answer.json() if answer.status_code == 200 else None

    @staticmethod
    def _ok(answer: requests.Response) -> requests.Response:
        if answer.status_code >= 400:
            raise StepFailed(_("%(method)s %(url)s answered %(status)s: %(text)s",
                               method=answer.request.method, url=answer.url,
                               status=answer.status_code,
                               text=" ".join(answer.text.split())[:200]))
        return answer


# --- the workshop in one container ---------------------------------------------------------------

#: The line ``lockshop up`` prints for the room: "room: URL    (code CODE)".
ROOM_LINE = re.compile(r"^\S*\s*\|?\s*room: \S+\s+\(code ([A-Z0-9]+)\)", re.M)
#: The reference lock of exercise 3, as the tests grade it; the wrong one releases with a
#: plain DEL, whoever holds the lock (the room must name lesson C11).
RIGHT_LOCK = Path("tests/exercise_locks/token_lock.py")
RIGHT_RELEASE = ('        if not self.run(self.RELEASE, keys=[self.key], args=[self.token]):\n'
                 '            raise LockLost(self.name, "the lease expired")')
WRONG_RELEASE = "        self.client.delete(self.key)  # a plain DEL: whoever holds it now"


class Workshop:
    def __init__(self, run: Run, compose: Compose):
        self.run = run
        self.compose = compose
        self.http = Http()
        self.code = ""

    def room(self, path: str) -> str:
        return self.run.url("LOCKSHOP_ROOM_PORT", path)

    def start(self) -> str:
        self.compose("--profile", "workshop", "up", "--detach", "--no-build", "workshop")

        def printed_its_room() -> bool:
            found = ROOM_LINE.search(self.compose("logs", "--no-color", "workshop"))
            self.code = found.group(1) if found else ""
            return bool(self.code)

        _wait(printed_its_room, READY_TIMEOUT_S, lambda: _(
            "lockshop up printed no room in %(seconds)s s: %(said)s", seconds=READY_TIMEOUT_S,
            said=self.compose("logs", "--no-color", "--tail", "3", "workshop").strip()))
        answered = []
        for name in ("LOCKSHOP_WORKSHOP_PORT", "LOCKSHOP_WORKSHOP_PORT_2",
                     "LOCKSHOP_WORKSHOP_PORT_3"):
            answered.append(Shop._ok(self.http.get(self.run.url(name, "/api/health"),
                                                   timeout=30)).json()["instance"])
        Shop._ok(self.http.get(self.run.url("LOCKSHOP_WORKSHOP_PORT", "/console"), timeout=30))
        Shop._ok(self.http.get(self.room("/room/"), timeout=30))
        return _("instances %(names)s, the console and the room (code %(code)s) answer on "
                 "the host's ports", names=", ".join(answered), code=self.code)

    def grade(self) -> str:
        right = (self.run.project / RIGHT_LOCK).read_text()
        if RIGHT_RELEASE not in right:
            raise StepFailed(_("%(file)s no longer releases as the check expects",
                               file=RIGHT_LOCK))
        wrong = right.replace(RIGHT_RELEASE, WRONG_RELEASE)
        joined = Shop._ok(self.http.post(self.room("/room/api/join"), timeout=30,
                                         json={"code": self.code, "name": "compose-check"}))
        student = {"X-Student": joined.json()["student"]}
        verdicts = {}
        for which, source in (("right", right), ("wrong", wrong)):
            posted = Shop._ok(self.http.post(self.room("/room/api/submissions"), headers=student,
                                             json={"exercise": "3", "source": source},
                                             timeout=30)).json()
            url = self.room(f"/room/api/submissions/{posted['id']}")
            seen: dict = {}

            def graded() -> bool:
                seen.update(Shop._ok(self.http.get(url, headers=student, timeout=30)).json())
                return seen.get("state") not in (None, "queued", "running")

            _wait(graded, GRADING_TIMEOUT_S, lambda: _(
                "the room did not grade the %(which)s lock in %(seconds)s s: %(state)s",
                which=which, seconds=GRADING_TIMEOUT_S, state=seen.get("state")))
            verdicts[which] = dict(seen)
        for which, verdict in verdicts.items():
            if verdict["state"] != "done":
                raise StepFailed(_("the room could not grade the %(which)s lock: %(message)s",
                                   which=which, message=verdict.get("message")))
        if verdicts["right"]["passed"] is not True:
            raise StepFailed(_("the room failed the right lock: %(message)s",
                               message=verdicts["right"]["message"]))
        failed = [c["lesson"] for c in verdicts["wrong"]["checks"] if not c["passed"]]
        if verdicts["wrong"]["passed"] is not False or failed[:1] != ["C11"]:
            raise StepFailed(_("the room did not fail the wrong lock on C11: %(message)s",
                               message=verdicts["wrong"]["message"]))
        return _("right: %(right)s; wrong: %(wrong)s", right=verdicts["right"]["message"],
                 wrong=verdicts["wrong"]["message"])


def _wait(condition: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
    """Until ``condition()`` holds, asked every half second; ``StepFailed(why())`` after
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise StepFailed(why())
        time.sleep(0.5)
