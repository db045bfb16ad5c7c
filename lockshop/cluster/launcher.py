"""Start several shop instances on one machine: separate OS processes,
each under gunicorn (one worker process, many threads), on consecutive ports,
all on one database.

One worker process per instance is deliberate: an "instance" is then exactly
one process, so the in-process strategy ``local`` means "one lock table per
instance", as it would on separate hosts.

Given a ``Network`` (``lockshop.cluster.network``), each instance runs on a
host of its own ("shop-1", ...), at its own address, so that a partition can
cut one instance off from Redis or ZooKeeper while the others still reach it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy.engine import make_url

from lockshop.cluster.network import LOOPBACK, Host, Network
from lockshop.cluster.processes import (
    StartError,
    free_port,
    pause_group,
    port_is_free,
    signal_group,
    spawn,
    stop,
    wait_for_http,
)
from shop.app import create_schema
from shop.config import Config
from shop.store.db import backend_name, make_engine, make_sessions, normalise_url
from shop.store.settings import ClusterSettings, seed_settings
from shop.i18n import ngettext

log = logging.getLogger(__name__)

#: What an instance serves unless told otherwise: the shop alone.
SHOP_APP = "shop.wsgi:app"


@dataclass
class Instance:
    name: str
    url: str
    process: subprocess.Popen
    log_path: Path


class Cluster:
    """N shop instances; a context manager that stops them all on exit."""

    def __init__(self, config: Config, *, instances: int = 3, port: int | None = None,
                 host: str = "127.0.0.1", threads: int = 16, runtime_dir: Path,
                 network: Network | None = None, app: str = SHOP_APP,
                 env: Mapping[str, str] | None = None) -> None:
        if instances < 1:
            raise ValueError("at least one instance is needed")
        self.config = replace(config, database_url=absolute_sqlite_url(config.database_url))
        self.count, self.first_port, self.host, self.threads = instances, port, host, threads
        self.runtime_dir = runtime_dir
        self.network = network
        #: What gunicorn serves, and what it is told beyond the config (the console's control).
        self.app, self.env = app, dict(env or {})
        self.instances: list[Instance] = []

    @property
    def urls(self) -> list[str]:
        return [i.url for i in self.instances]

    def start(self) -> Cluster:
        self.runtime_dir.mkdir(parents=True, exist_ok=True)
        self.prepare_database()
        ports = self._ports()
        try:
            for n, port in enumerate(ports, start=1):
                self.instances.append(self._spawn(f"shop-{n}", port))
            for instance in self.instances:
                wait_for_http(f"{instance.url}/api/health", instance.process, instance.log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        # Side by side, not in turn: each takes up to a second to finish its requests.
        with ThreadPoolExecutor(max_workers=max(1, len(self.instances))) as pool:
            list(pool.map(lambda instance: stop(instance.process), self.instances))
        self.instances.clear()

    # --- faults: the launcher owns the processes, so it is the one to hurt them ---

    def instance(self, name: str) -> Instance:
        for instance in self.instances:
            if instance.name == name:
                return instance
        raise KeyError(f"no instance named {name!r}")

    def kill(self, name: str) -> None:
        """SIGKILL an instance: a crash, with no chance to release anything."""
        instance = self.instance(name)
        signal_group(instance.process, signal.SIGKILL)
        instance.process.wait()

    def pause(self, name: str) -> None:
        """SIGSTOP an instance: it holds its connections and locks, and does nothing
        (from the moment this returns)."""
        pause_group(self.instance(name).process)

    def resume(self, name: str) -> None:
        signal_group(self.instance(name).process, signal.SIGCONT)

    def restart(self, name: str) -> None:
        """Start a stopped or killed instance again, on its port, with its log."""
        old = self.instance(name)
        if old.process.poll() is None:
            stop(old.process)
        port = int(old.url.rsplit(":", 1)[1])
        new = self._spawn(name, port)
        self.instances[self.instances.index(old)] = new
        wait_for_http(f"{new.url}/api/health", new.process, new.log_path)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def prepare_database(self) -> None:
        """Create the tables and seed the settings' defaults (again is harmless).

        Before any instance starts, so that instances never race to create tables
        (they would cope, but the logs would be noisy), and so that a caller can
        set the cluster up before anyone can reach it."""
        engine = make_engine(self.config.database_url)
        try:
            create_schema(engine)
            seed_settings(make_sessions(engine),
                          ClusterSettings.from_config(self.config))
        finally:
            engine.dispose()

    def _ports(self) -> list[int]:
        if self.first_port is None:
            return [free_port(self.host) for _ in range(self.count)]
        ports = list(range(self.first_port, self.first_port + self.count))
        taken = [p for p in ports if not port_is_free(p, self.host)]
        if taken:
            raise StartError(ngettext(
                "port %(ports)s on %(host)s is in use; choose another --port",
                "ports %(ports)s on %(host)s are in use; choose another --port", len(taken),
                ports=", ".join(map(str, taken)), host=self.host))
        return ports

    def host_of(self, name: str) -> Host:
        """Where the instance called ``name`` runs: its own host on the network, if any."""
        if self.network is not None:
            return self.network.host(name)
        return LOOPBACK if self.host == LOOPBACK.address else Host(name, self.host)

    def _spawn(self, name: str, port: int) -> Instance:
        env = {**os.environ, **replace(self.config, instance=name).to_env(), **self.env}
        host = self.host_of(name)
        command = host.command([sys.executable, "-m", "gunicorn",
                                *gunicorn_arguments(f"{host.address}:{port}", self.threads,
                                                    self.app),
                                "--name", f"lockshop-{name}", "--error-logfile", "-"])
        log_path = self.runtime_dir / f"{name}.log"
        process = spawn(command, env=env, log_path=log_path)
        return Instance(name, f"http://{host.address}:{port}", process, log_path)


def gunicorn_arguments(bind: str, threads: int = 16, app: str = SHOP_APP) -> list[str]:
    """How an instance is served, here and in docker-compose.yml (a test keeps them equal)."""
    return [app, "--bind", bind, "--workers", "1", "--worker-class", "gthread",
            "--threads", str(threads), "--graceful-timeout", "5",
            # Its default socket path is one per user: instances would share it.
            "--no-control-socket"]


def absolute_sqlite_url(url: str) -> str:
    """Children may run elsewhere: pin a relative SQLite path to this directory."""
    url = normalise_url(url)
    if backend_name(url) != "sqlite":
        return url
    parsed = make_url(url)
    if not parsed.database or parsed.database == ":memory:":
        raise ValueError("instances cannot share an in-memory SQLite database; give a file")
    path = Path(parsed.database).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return parsed.set(database=str(path)).render_as_string(hide_password=False)
