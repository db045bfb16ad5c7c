"""Partitions between real hosts: each instance and server in a network namespace of its
own, links cut with firewall rules (``lockshop.cluster.network``).

These are the cases a single loopback cannot stage: one instance cut off from
its lock service while the others still reach it. Every race is forced: the
holder sits in a business delay longer than the partition and the lease (or
the ZooKeeper session), and the second buyer comes only once the lease is over.
Needs root (CI has it); elsewhere each test skips and says why.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

import pytest
import redis
import requests
from sqlalchemy import text

from helpers import in_its_business_delay, lockshop_up, require, require_zookeeper, wait_for
from lockshop.cluster.client import ShopClient
from lockshop.cluster.network import Link, NetworkError
from lockshop.cluster.network import unavailable as network_unavailable
from lockshop.cluster.postgres_servers import PostgresServer, postgres_unavailable
from lockshop.cluster.redis_servers import RedisServer, redis_server_binary
from lockshop.cluster.scratch import scratch_database
from lockshop.cluster.zookeeper_servers import ZooKeeperServer
from lockshop.cluster.hold_logs import collect_holds, overlap_audit
from shop.store.db import make_engine

pytestmark = pytest.mark.cluster


@pytest.fixture
def servers(network, tmp_path):
    """Start servers on hosts of the network, by name; all stopped after the test
    (before the network goes: this fixture depends on it)."""
    require(redis_server_binary() is not None, "redis-server is not installed")
    with ExitStack() as stack:
        def start(kind: str, name: str):
            if kind == "zookeeper":
                require_zookeeper()
                server = ZooKeeperServer(tmp_path / "servers", name, host=network.host(name))
            else:
                server = RedisServer(tmp_path / "servers", name, host=network.host(name))
            return stack.enter_context(server)
        yield start


@pytest.fixture
def postgres(network):
    """A PostgreSQL server of our own on host "postgres", and a fresh database on it:
    (server, database URL)."""
    require(postgres_unavailable() is None, f"cannot start PostgreSQL: {postgres_unavailable()}")
    with (PostgresServer(host=network.host("postgres")) as server,
          scratch_database(server.admin_url, "lockshop_test") as url):
        yield server, url


def order_in_background(url: str, answers: dict, key: str = "first") -> threading.Thread:
    def order() -> None:
        answers[key] = requests.post(f"{url}/api/orders", json={"product_id": 1}, timeout=60)
    thread = threading.Thread(target=order)
    thread.start()
    return thread


def advisory_lock_taken(database_url: str):
    """A condition to wait for: an order holds its ``pg_advisory_xact_lock``, as
    PostgreSQL's own ``pg_locks`` says (that strategy keeps no hold log)."""
    engine = make_engine(database_url)

    def taken() -> bool:
        try:
            with engine.connect() as db:
                return bool(db.scalar(text("SELECT count(*) FROM pg_locks "
                                           "WHERE locktype = 'advisory' AND granted")))
        finally:
            engine.dispose()
    return taken


def overlaps_of(cluster, since: float) -> dict:
    return overlap_audit(collect_holds({i.name: i.url for i in cluster.instances}, since,
                                       labs=False, timeout=10))["locks"]["product:1"]


def test_hosts_have_their_own_addresses_and_a_partition_drops_silently(network, servers):
    redis = servers("redis", "redis")
    client = network.host("client")
    assert len({redis.host.address, client.address, network.machine.address}) == 3

    def ping(timeout: float = 1.0) -> str:
        script = ("import socket\ntry:\n"
                  f" s = socket.create_connection(('{redis.host.address}', {redis.port}), "
                  f"timeout={timeout})\n s.sendall(b'PING\\r\\n'); print(s.recv(7).decode())\n"
                  "except OSError as e: print(type(e).__name__)")
        return subprocess.run(client.command([sys.executable, "-c", script]),
                              capture_output=True, text=True, timeout=30).stdout.strip()

    assert ping() == "+PONG"
    network.partition(["client"], ["redis"], one_way=True)
    assert ping() == "TimeoutError"  # no refusal, no reset: the packets vanish
    network.heal()
    assert ping() == "+PONG"
    network.partition(["redis"], ["client"], one_way=True)  # the answers are lost this time
    assert ping() == "TimeoutError"


def shop_1_s_answer_is_refused(cluster, network, admin: ShopClient, first: threading.Thread,
                               answers: dict, someone_else_buys: bool) -> None:
    """shop-1 lost its lock while in its business delay; shop-2 buys meanwhile (or not).
    shop-1's order must end in a 503: ``stale_write`` when shop-2's newer token wrote
    first, ``lock_lost`` otherwise; and only shop-2's sale is in the audit."""
    if someone_else_buys:
        admin.set_settings(business_delay_ms=0)
        second = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1},
                               timeout=30)
        assert second.status_code == 201, second.text
    first.join()
    network.heal()
    assert answers["first"].status_code == 503, answers["first"].text
    expected = "stale_write" if someone_else_buys else "lock_lost"
    assert answers["first"].json()["error"] == expected
    audit = admin.audit()
    assert audit["correct"], audit["totals"]
    assert audit["totals"]["sold"] == (1 if someone_else_buys else 0)


def round_trip_ms(client, server) -> float:
    """The median of 9 round trips (TCP connect) from host ``client`` to ``server``."""
    script = ("import socket, statistics, time\ntimes = []\nfor _ in range(9):\n"
              " t = time.monotonic()\n"
              f" socket.create_connection(('{server.host.address}', {server.port}), "
              "timeout=10).close()\n"
              " times.append((time.monotonic() - t) * 1000)\n"
              "print(statistics.median(times))")
    return float(subprocess.run(client.command([sys.executable, "-c", script]),
                                capture_output=True, text=True, timeout=60).stdout)


def test_a_slow_link_delays_what_its_host_sends_and_heals(network, servers):
    redis_server = servers("redis", "redis")
    client = network.host("client")
    assert round_trip_ms(client, redis_server) < 50
    network.slow("client", Link(delay_ms=200))
    assert 200 <= round_trip_ms(client, redis_server) < 300
    network.slow("redis", Link(delay_ms=100), receivers=["machine"])  # not towards client
    assert 200 <= round_trip_ms(client, redis_server) < 300
    assert network.as_dict()["slow"]["redis"]["to"] == ["machine"]
    network.heal()
    assert round_trip_ms(client, redis_server) < 50 and network.as_dict()["slow"] == {}
    for bad in (lambda: network.slow("machine", Link(100)),
                lambda: network.slow("client", Link(100), receivers=["nowhere"]),
                lambda: Link(delay_ms=100, jitter_ms=200),
                lambda: Link(loss_percent=101)):
        with pytest.raises(NetworkError):
            bad()


@pytest.mark.parametrize("someone_else_buys", [False, True])
def test_latency_on_the_holders_link_makes_a_watchdog_renewal_miss(network, servers,
                                                                  start_cluster,
                                                                  someone_else_buys):
    """The watchdog renews a 1 s lease every third of it, and waits for each answer
    before the next wait: a renewal lands (latency + lease/3) after the one before.
    With 900 ms on shop-1's link that is 1.23 s: the lease ends between two renewals
    while the holder is alive and well. Its watchdog learns it, so the order fails
    before it commits (LockLost); and if shop-2 took the lock and sold meanwhile, the
    fencing token refuses shop-1's write first. Never both written."""
    redis_server = servers("redis", "redis")
    cluster = start_cluster(2, network=network, redis_url=redis_server.url,
                            lock_lease_ms=1000)
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="redis_watchdog", business_delay_ms=5000)
    watcher = redis.Redis.from_url(redis_server.url, socket_timeout=5)
    since, answers = time.time(), {}
    first = order_in_background(cluster.urls[0], answers)
    in_its_business_delay(cluster, 0)
    # The watchdog renews on a healthy link: the key's time to live is seen to go back up.
    key, last = "lockshop:lock:product:1", []

    def renewed() -> bool:
        ttl = watcher.pttl(key)
        grew = bool(last) and ttl > last[-1]
        last.append(ttl)
        return grew

    wait_for(renewed, timeout=5, message="the watchdog to renew the 1 s lease")
    network.slow("shop-1", Link(delay_ms=900))
    wait_for(lambda: not watcher.exists("lockshop:lock:product:1"), timeout=5,
             message="the lease to end between two slowed renewals")
    shop_1_s_answer_is_refused(cluster, network, admin, first, answers, someone_else_buys)
    product = overlaps_of(cluster, since)
    assert product["overlaps"] == (1 if someone_else_buys else 0), product
    assert product["both_wrote"] == 0, product


def test_a_holder_cut_off_from_redis_past_its_lease_is_fenced(network, servers, start_cluster):
    redis_server = servers("redis", "redis")
    cluster = start_cluster(2, network=network, redis_url=redis_server.url, lock_lease_ms=1000)
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="redis", business_delay_ms=2500)
    since, answers = time.time(), {}
    first = order_in_background(cluster.urls[0], answers)
    in_its_business_delay(cluster, 0)
    network.partition(["shop-1"], ["redis"])
    watcher = redis.Redis.from_url(redis_server.url, socket_timeout=5)  # not cut off
    wait_for(lambda: not watcher.exists("lockshop:lock:product:1"), timeout=5,
             message="shop-1's 1 s lease to run out on the server (shop-1 cannot know)")
    admin.set_settings(business_delay_ms=0)
    second = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1}, timeout=30)
    first.join()
    network.heal()
    assert second.status_code == 201, second.text
    assert answers["first"].status_code == 503
    assert answers["first"].json()["error"] == "stale_write"
    audit = admin.audit()
    assert audit["correct"] and audit["totals"]["sold"] == 1
    assert audit["totals"]["stale_writes_rejected"] == 1
    product = overlaps_of(cluster, since)
    assert product["overlaps"] == 1 and product["both_wrote"] == 0, product


@pytest.mark.parametrize("someone_else_buys", [False, True])
def test_a_holder_cut_off_from_zookeeper_past_its_session(network, servers, start_cluster,
                                                          open_lock_factory, someone_else_buys):
    """Cut off past its session, the holder loses its lock: its connection is SUSPENDED,
    so the check before the commit says LockLost and nothing is written. And had its
    write gone out anyway, the zxid of the newer holder's node fences it."""
    zookeeper = servers("zookeeper", "zookeeper")
    cluster = start_cluster(2, network=network, zk_hosts=zookeeper.address,
                            lock_lease_ms=2000)  # the session timeout
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="zk_fair", business_delay_ms=4000)
    since, answers = time.time(), {}
    first = order_in_background(cluster.urls[0], answers)
    in_its_business_delay(cluster, 0)
    network.partition(["shop-1"], ["zookeeper"])
    watcher = open_lock_factory("zk_fair", zk_hosts=zookeeper.address)  # not cut off
    wait_for(lambda: not watcher.look("product:1").holders, timeout=10,
             message="the server to end shop-1's 2 s session, and delete its node")
    shop_1_s_answer_is_refused(cluster, network, admin, first, answers, someone_else_buys)
    assert overlaps_of(cluster, since)["both_wrote"] == 0


def test_redlock_locks_with_two_of_five_cut_off_and_refuses_with_three(network, servers,
                                                                      start_cluster):
    redlock = [servers("redis", f"redlock-{n}") for n in range(1, 6)]
    cluster = start_cluster(1, network=network, redis_urls=",".join(s.url for s in redlock),
                            lock_timeout_ms=1500)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="redlock", business_delay_ms=0)
    answers = {}
    for cut in (0, 2, 3):
        network.heal()
        network.partition(["shop-1"], [f"redlock-{n}" for n in range(1, cut + 1)])
        answer = requests.post(f"{cluster.urls[0]}/api/orders", json={"product_id": 1},
                               timeout=30)
        answers[cut] = answer.status_code, answer.json().get("error")
    network.heal()
    assert answers[0] == (201, None) and answers[2] == (201, None)  # 5 or 3 of 5: a majority
    # 2 of 5 answer: no majority, so no lock and no sale (the majority is out of reach)
    assert answers[3] == (503, "backend_unavailable"), answers
    assert admin.audit()["totals"]["sold"] == 2


def test_a_holder_cut_off_from_postgresql_keeps_its_advisory_lock(network, postgres,
                                                                   start_cluster):
    """The database's lock has no lease: cut off from PostgreSQL, the holder's session,
    and its ``pg_advisory_xact_lock``, live on. The next buyer waits its lock timeout and
    is refused (503), where a Redis lock would have let it in and fenced the first; once
    the link heals the first order commits. Nothing sold twice, nothing lost."""
    _, database_url = postgres
    cluster = start_cluster(2, database_url, network=network, lock_timeout_ms=1000)
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="pg_advisory", business_delay_ms=1500)
    answers = {}
    first = order_in_background(cluster.urls[0], answers)
    wait_for(advisory_lock_taken(database_url), message="shop-1 to take the advisory lock")
    network.partition(["shop-1"], ["postgres"])
    # Then its write waits on the cut link, uncommitted.
    time.sleep(1.6)  # its 1.5 s business delay must run out: time is the point
    admin.set_settings(business_delay_ms=0)
    second = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1}, timeout=30)
    network.heal()
    first.join()
    assert second.status_code == 503 and second.json()["error"] == "lock_timeout", second.text
    assert answers["first"].status_code == 201, answers["first"].text
    audit = admin.audit()
    assert audit["correct"] and audit["totals"]["sold"] == 1, audit["totals"]


def test_postgresql_restarted_mid_order_is_a_503_then_the_shop_recovers(network, postgres,
                                                                         start_cluster):
    """The server stops while an order holds its transaction open: that order is a 503
    (never a 500), and the next one, on a connection the pool checks first, sells."""
    server, database_url = postgres
    cluster = start_cluster(1, database_url, network=network)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="pg_advisory", business_delay_ms=2000)
    answers = {}
    first = order_in_background(cluster.urls[0], answers)
    wait_for(advisory_lock_taken(database_url), message="the order to take the advisory lock")
    server.restart()
    first.join()
    admin.set_settings(business_delay_ms=0)
    second = requests.post(f"{cluster.urls[0]}/api/orders", json={"product_id": 1}, timeout=30)
    assert answers["first"].status_code == 503, answers["first"].text
    assert answers["first"].json()["error"] == "database_unavailable"
    assert second.status_code == 201, second.text
    audit = admin.audit()
    assert audit["correct"] and audit["totals"]["sold"] == 1, audit["totals"]


def test_an_instance_cut_off_from_its_database_answers_503_not_never(network, postgres,
                                                                     start_cluster):
    """A cut link drops packets without a word, and the kernel retransmits for about 15
    minutes: without a timeout of its own the shop would hold the buyer that long. It
    answers a 503 within seconds instead; the other instance sells on; once healed,
    the cut-off instance sells again."""
    _, database_url = postgres
    cluster = start_cluster(2, database_url, network=network)
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="atomic", business_delay_ms=0)

    def buy(n: int) -> requests.Response:
        return requests.post(f"{cluster.urls[n]}/api/orders", json={"product_id": 1},
                             timeout=60)

    assert buy(0).status_code == 201  # shop-1's pool holds a connection now
    network.partition(["shop-1"], ["postgres"])
    cut_off = buy(0)
    assert (cut_off.status_code, cut_off.json()["error"]) == (503, "database_unavailable")
    assert buy(1).status_code == 201
    network.heal()
    assert buy(0).status_code == 201
    audit = admin.audit()
    assert audit["correct"] and audit["totals"]["sold"] == 3, audit["totals"]


def test_a_leader_cut_off_from_zookeeper_stops_leading_before_another_is_elected(
        network, servers, start_cluster):
    """Jobs under leader election, every 300 ms. Cut the leader off from ZooKeeper for
    longer than its session: it must stop running jobs at once (its connection is
    SUSPENDED), another instance is elected once the session expires, and no fire time
    runs twice: never two leaders."""
    zookeeper = servers("zookeeper", "zookeeper")
    cluster = start_cluster(2, network=network, zk_hosts=zookeeper.address,
                            lock_lease_ms=2000)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="zk_fair", job_guard="leader", job_interval_ms=300)

    def runs(after: int = 0) -> list[dict]:
        return [r for r in admin.get("/api/admin/jobs")["runs"] if r["id"] > after]

    wait_for(lambda: len(runs()) >= 4, timeout=20, interval=0.2, message="4 job runs")
    leader = runs()[-1]["instance"]
    other = "shop-2" if leader == "shop-1" else "shop-1"
    cut = runs()[-1]["id"]
    network.partition([leader], ["zookeeper"])
    # Past the session, the other is elected and runs the jobs.
    wait_for(lambda: [r for r in runs(after=cut) if r["instance"] == other], timeout=20,
             interval=0.2, message=f"{other} to be elected and run a job")
    healed = runs()[-1]["id"]
    network.heal()
    wait_for(lambda: len(runs(after=healed)) >= 3, timeout=10, interval=0.2,
             message="three more runs, the old leader back in touch")
    audit = ShopClient(cluster.urls[0 if other == "shop-1" else 1]).audit()["jobs"]
    assert audit["duplicate_runs"] == 0, audit


# --- the launcher's hosts mode, and the control's network faults ---------------------

def test_lockshop_up_on_hosts_cuts_and_heals_links_from_the_control(tmp_path):
    """``lockshop up --hosts`` as a user starts it: the control cuts shop-1 off from Redis
    (its orders fail with a 503, shop-2 still sells), refuses what is not a partition,
    slows a link and refuses what is not a slowing, heals; and on Ctrl-C every namespace
    and the bridge are gone."""
    require(network_unavailable() is None,
            f"cannot make hosts on this machine: {network_unavailable()}")
    require(redis_server_binary() is not None, "redis-server is not installed")
    with lockshop_up("--hosts", "--instances", "2", "--strategy", "redis", "--reset",
                     cwd=tmp_path) as text:
        control = re.search(r"control \(labs, faults, sales\): (\S+)", text).group(1)
        shops = dict(re.findall(r"^  (shop-\d)  (\S+)", text, re.M))
        assert set(shops) == {"shop-1", "shop-2"}, text
        assert all(not url.startswith("http://127.") for url in shops.values()), shops

        def act(path: str, body: dict | None = None) -> requests.Response:
            return requests.post(f"{control}{path}", json=body, timeout=30)

        def buy(shop: str) -> int:
            return requests.post(f"{shops[shop]}/api/orders", json={"product_id": 1},
                                 timeout=30).status_code

        cut = act("/control/network/partition", {"from": ["shop-1"], "to": ["redis"]})
        assert cut.status_code == 200, cut.text
        assert cut.json()["network"]["cut"] == ["redis -> shop-1", "shop-1 -> redis"]
        assert (buy("shop-1"), buy("shop-2")) == (503, 201)
        for body, status in (({"from": "shop-1", "to": ["redis"]}, 400),
                             ({"from": ["shop-9"], "to": ["redis"]}, 422),
                             ({"from": ["redis"], "to": ["redis"]}, 422),
                             ({"from": ["redis"], "to": ["machine"]}, 422)):
            refused = act("/control/network/partition", body)
            assert refused.status_code == status, (body, refused.text)
        state = requests.get(f"{control}/control/state", timeout=10).json()
        assert len(state["network"]["cut"]) == 2  # the refusals changed nothing
        slowed = act("/control/network/slow", {"host": "shop-1", "delay_ms": 50, "to": ["redis"]})
        assert slowed.status_code == 200, slowed.text
        assert slowed.json()["network"]["slow"]["shop-1"]["to"] == ["redis"]
        for body, status in (({"host": ["shop-1"], "delay_ms": 50}, 400),
                             ({"host": "shop-1", "delay_ms": "50"}, 400),
                             ({"host": "shop-1", "delay_ms": 50, "to": "redis"}, 400),
                             ({"host": "shop-9", "delay_ms": 50}, 422),
                             ({"host": "machine", "delay_ms": 50}, 422),
                             ({"host": "shop-1", "delay_ms": 50, "jitter_ms": 80}, 422),
                             ({"host": "shop-1", "loss_percent": 120}, 422)):
            refused = act("/control/network/slow", body)
            assert refused.status_code == status, (body, refused.text)
        state = requests.get(f"{control}/control/state", timeout=10).json()
        assert state["network"]["slow"]["shop-1"]["delay_ms"] == 50  # unchanged by refusals
        healed = act("/control/network/heal").json()["network"]
        assert healed["cut"] == [] and healed["slow"] == {}
        assert buy("shop-1") == 201
        bridge = state["network"]["bridge"]
    tag = bridge.removeprefix("lsbr-")
    assert f"lockshop-{tag}-" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                   text=True).stdout
    assert subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode != 0


def test_lockshop_up_on_hosts_with_a_postgresql_of_its_own(tmp_path):
    """``lockshop up --hosts --database postgresql``: the shop runs on a PostgreSQL server
    on host "postgres" (the machine's own is out of the hosts' reach); the console can
    stop it (orders are 503s) and start it again (orders sell again)."""
    require(network_unavailable() is None,
            f"cannot make hosts on this machine: {network_unavailable()}")
    require(postgres_unavailable() is None, f"cannot start PostgreSQL: {postgres_unavailable()}")
    with lockshop_up("--hosts", "--instances", "1", "--database", "postgresql",
                     "--strategy", "pg_advisory", "--reset", cwd=tmp_path) as text:
        database = re.search(r"instances? on postgresql\S*@([\d.]+):", text)
        hosts = dict(re.findall(r"(\S+) ([\d.]+)(?:,|$)", text.split("this machine: ")[1]))
        assert database and database.group(1) == hosts["postgres"], text
        control = re.search(r"control \(labs, faults, sales\): (\S+)", text).group(1)
        shop = re.search(r"^  shop-1  (\S+)", text, re.M).group(1)

        def buy() -> requests.Response:
            return requests.post(f"{shop}/api/orders", json={"product_id": 1}, timeout=60)

        assert buy().status_code == 201
        stopped = requests.post(f"{control}/control/servers/postgres/stop", timeout=30)
        assert stopped.status_code == 200, stopped.text
        refused = buy()
        assert (refused.status_code, refused.json()["error"]) == (503, "database_unavailable")
        started = requests.post(f"{control}/control/servers/postgres/start", timeout=60)
        assert started.status_code == 200, started.text
        assert buy().status_code == 201
