"""Fixtures: real databases, real shop instances, real servers.

PostgreSQL and MariaDB are the servers running on this machine (override
with LOCKSHOP_TEST_POSTGRES_ADMIN_URL / LOCKSHOP_TEST_MYSQL_ADMIN_URL); each
test gets a database of its own, created and dropped here. When a server is
missing, a test skips with a loud reason, unless LOCKSHOP_REQUIRE_SERVERS=1
(set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import locks
from locks import Backends
from lockshop.cluster.network import Network, unavailable
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.redis_servers import RedisServer, redis_server_binary
from lockshop.cluster.scratch import scratch_database, server_error
from lockshop.cluster.zookeeper_servers import ZooKeeperEnsemble, ZooKeeperServer
from helpers import require, require_zookeeper, wait_until_available
from shop.app import create_app, create_schema
from shop.config import Config
from shop.store.db import make_engine, make_sessions
from shop.store.products import reset_products

POSTGRES_ADMIN_URL = os.environ.get("LOCKSHOP_TEST_POSTGRES_ADMIN_URL",
                                    "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MYSQL_ADMIN_URL = os.environ.get("LOCKSHOP_TEST_MYSQL_ADMIN_URL",
                                 "mysql+pymysql://root@127.0.0.1:3306/")


def pytest_xdist_make_scheduler(config, log):
    """Spread the tests one by one (xdist's ``load``, what ``-n`` does), except a module with
    a module-scoped fixture of its own (a browser, a cluster, a report's run, a handbook's
    build): its tests go to one worker together, so that fixture starts once, where spread
    over four workers it started up to four times, each time in the suite's test time.
    (xdist's ``--dist loadgroup`` would do it from marks, but it cannot name the groups
    under pytest 9.) Other ``--dist`` modes are left as they are."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    tests = Path(__file__).parent
    once = {path.relative_to(config.rootpath).as_posix() for path in tests.glob("test_*.py")
            if '@pytest.fixture(scope="module"' in path.read_text()}

    class ModuleFixturesOnce(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in once else nodeid

    return ModuleFixturesOnce(config, log)


def pytest_xdist_auto_num_workers(config) -> int:
    """How many workers ``-n auto`` (what ``./run tests`` passes) starts: more than the
    cores, because most tests wait (on a server starting, a lease running out, a business
    delay) far longer than they compute. LOCKSHOP_TEST_WORKERS overrides it."""
    return int(os.environ.get("LOCKSHOP_TEST_WORKERS") or 2 * (os.cpu_count() or 1))


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    error = server_error(POSTGRES_ADMIN_URL)
    require(error is None, f"PostgreSQL at {POSTGRES_ADMIN_URL} is not usable ({error})")
    return POSTGRES_ADMIN_URL


@pytest.fixture(scope="session")
def mysql_admin_url() -> str:
    error = server_error(MYSQL_ADMIN_URL)
    require(error is None, f"MariaDB/MySQL at {MYSQL_ADMIN_URL} is not usable ({error})")
    return MYSQL_ADMIN_URL


@pytest.fixture
def start_redis(tmp_path: Path):
    """Start real redis-server processes on free ports; all stopped after the test."""
    require(redis_server_binary() is not None,
            "redis-server is not installed (./run installs it: apt-get install redis-server)")
    servers: list[RedisServer] = []

    def start() -> RedisServer:
        server = RedisServer(tmp_path / "redis", name=f"redis-{len(servers)}").start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def redis_server(start_redis) -> RedisServer:
    return start_redis()


@pytest.fixture
def network():
    """Hosts on this machine: network namespaces on a bridge, removed after the test
    (whatever runs on them must be stopped first: fixtures that use this one are)."""
    problem = unavailable()
    require(problem is None, f"cannot make hosts on this machine: {problem}")
    with Network() as lan:
        yield lan


@pytest.fixture
def zookeeper(tmp_path: Path):
    """A real standalone ZooKeeper on a free port, data in the test's folder."""
    require_zookeeper()
    with ZooKeeperServer(tmp_path / "zookeeper") as server:
        yield server


@pytest.fixture
def zk_ensemble(tmp_path: Path):
    """Three real ZooKeeper servers that elect a leader."""
    require_zookeeper()
    with ZooKeeperEnsemble(tmp_path / "ensemble") as ensemble:
        yield ensemble


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'shop.db'}"


@pytest.fixture
def postgres_url(postgres_admin_url: str):
    with scratch_database(postgres_admin_url, "lockshop_test") as url:
        yield url


@pytest.fixture
def mysql_url(mysql_admin_url: str):
    with scratch_database(mysql_admin_url, "lockshop_test") as url:
        yield url


@pytest.fixture(params=[
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
])
def database_url(request) -> str:
    """The same test on SQLite, PostgreSQL and MariaDB."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def sessions(database_url):
    """A session factory on a fresh schema, on each of the three databases."""
    engine = make_engine(database_url)
    create_schema(engine)
    yield make_sessions(engine)
    engine.dispose()


@pytest.fixture
def make_app():
    """Build apps on a given database; engines are disposed after the test."""
    apps = []

    def build(database_url: str, **config):
        config.setdefault("instance", "test")
        app = create_app(Config(database_url=database_url, **config))
        app.config["TESTING"] = True
        reset_products(app.extensions["lockshop"].sessions)
        apps.append(app)
        return app

    yield build
    for app in apps:
        state = app.extensions["lockshop"]
        state.strategies.close()
        state.engine.dispose()


@pytest.fixture
def app(make_app, sqlite_url):
    return make_app(sqlite_url)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def start_cluster(tmp_path: Path):
    """Start real shop instances (gunicorn processes); all stopped after the test."""
    clusters: list[Cluster] = []

    def start(instances: int, database_url: str | None = None, *, network=None,
              **config) -> Cluster:
        url = database_url or f"sqlite:///{tmp_path / 'cluster.db'}"
        # The jobs start switched off; a test of the jobs switches them on. On the
        # default schedule a fire time could fall between the start and the test's
        # own settings, and every instance would run jobs it never asked for.
        config.setdefault("job_interval_ms", 0)
        cluster = Cluster(Config(database_url=url, **config), instances=instances,
                          runtime_dir=tmp_path / f"cluster-{len(clusters)}", network=network)
        clusters.append(cluster)
        return cluster.start()

    yield start
    for cluster in clusters:
        cluster.stop()


@pytest.fixture
def open_lock_factory(request, tmp_path):
    """Open a strategy's lock factory on the backends it needs, started for the test: a
    SQLite file, the test's Redis server (and five more for Redlock), its ZooKeeper.
    Keyword arguments are given to ``Backends`` over those (``lease_ms``, ``faults``, a
    server of the test's own). Every factory is closed after the test."""
    opened = []

    def open_(name: str, **backends):
        needs = locks.get(name).requires
        if "zookeeper" in needs and "zk_hosts" not in backends:
            backends["zk_hosts"] = request.getfixturevalue("zookeeper").address
        if "redis" in needs and "redis_url" not in backends:
            backends["redis_url"] = request.getfixturevalue("redis_server").url
        if name == "redlock" and "redis_urls" not in backends:
            start = request.getfixturevalue("start_redis")
            backends["redis_urls"] = tuple(start().url for _ in range(5))
        backends.setdefault("database_url", f"sqlite:///{tmp_path / 'l.db'}")
        factory = locks.open_factory(name, Backends(**backends))
        wait_until_available(factory)
        opened.append(factory)
        return factory

    yield open_
    for factory in opened:
        factory.close()
