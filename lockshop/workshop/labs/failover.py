"""A Redis master with a replica and Sentinel (A2, A4): a failover that loses a lock.

Replication is asynchronous: the master answers "OK" to a ``SET`` before any
replica has it. If the master dies in that moment and Sentinel promotes the
replica, the lock is simply not there any more, and a second client takes
it. Here the moment is held open by pausing the replica (SIGSTOP) while the
first client locks; then the master is killed.
"""

from __future__ import annotations

import time
from contextlib import ExitStack

import redis

from locks.redis_support import FENCE_EPOCH, KEY_PREFIX
from lockshop.cluster.redis_servers import RedisSentinel, RedisServer
from lockshop.workshop.staging import steps
from lockshop.workshop.staging.record import Lab
from shop.store.models import ProductKind
from shop.store.products import ProductSpec
from shop.i18n import N_, _, yes_no

KEY = KEY_PREFIX + "product:1"


def stage_failover(run) -> None:
    for half, how, fenced in (
            ("broken", _("the stock write trusts the lock"), False),
            ("fix", _("the stock write carries the lock's fencing token"), True)):
        getattr(run, half)(_("redis, a replica and Sentinel"), how)
        folder = run.parts.folder(run.lab.name)
        with ExitStack() as stack:
            master = stack.enter_context(RedisServer(folder, "master"))
            replica = stack.enter_context(RedisServer(folder, "replica", replica_of=master.port))
            sentinel = stack.enter_context(RedisSentinel(folder, master.port))
            wait_for(lambda: _replicas_known(sentinel) and _in_sync(replica))
            _stage_one_failover(run, master, replica, sentinel, fenced)


def _stage_one_failover(run, master, replica, sentinel, fenced: bool) -> None:
    sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=5))
    factory = run.open_locks("redis", redis_url=master.url, lease_ms=10_000)
    warm = factory.lock("product:1")  # the fencing epoch and counter exist, and are copied
    warm.acquire()
    warm.release()
    wait_for(lambda: _client(replica).exists(FENCE_EPOCH))
    # The replica stops, and the master drops its link to it: A's write stays on the
    # master alone (a paused replica with its link open would still find the write
    # in its socket when it wakes).
    replica.pause()
    _client(master).client_kill_filter(_type="replica")
    a = factory.lock("product:1")
    a.acquire()
    a_read = steps.read(sessions)
    run.check(_("A takes the lock on the master, before the replica has copied it (the "
                "replica is paused)"), expected=_("the master says OK: A holds the lock"),
              observed=_("A holds: %(held)s; the key on the master: %(key)s",
                         held=yes_no(a.held), key=yes_no(bool(_client(master).exists(KEY)))),
              agrees=a.held)
    master.kill()
    replica.resume()
    promoted = wait_for(lambda: _master_port(sentinel) == replica.port, seconds=20)
    on_new_master = bool(_client(replica).exists(KEY))
    run.check(_("the master dies; Sentinel promotes the replica"),
              expected=_("the new master never had A's key"),
              observed=_("promoted: %(promoted)s; A's key on the new master: %(key)s",
                         promoted=yes_no(promoted), key=yes_no(on_new_master)),
              agrees=promoted and not on_new_master)
    b = run.open_locks("redis", redis_url=replica.url, lease_ms=10_000).lock("product:1")
    b_holds = b.acquire(blocking=False)
    b_read = steps.read(sessions)
    steps.sell(sessions, b_read, b.fencing_token)
    run.check(_("B asks the new master for the lock, and sells one unit"),
              expected=_("B gets it while A still believes it holds it: two holders"),
              observed=_("B holds: %(b)s; A holds: %(a)s; B wrote stock %(wrote)s",
                         b=yes_no(b_holds), a=yes_no(a.held), wrote=b_read - 1),
              agrees=b_holds and a.held)
    steps.late_write(run, sessions, a_read, a.fencing_token if fenced else None,
                     action=_("A writes what it computed: stock 4"),
                     refused=_("the new master counted fencing tokens from what the replica "
                               "had, so A's fencing token is not newer than B's. Fencing "
                               "closes it; Redlock or WAIT only make the window smaller"))


def _client(server) -> redis.Redis:
    return redis.Redis(port=server.port, socket_timeout=2)


def _replicas_known(sentinel) -> bool:
    return bool(_client(sentinel).execute_command("SENTINEL", "REPLICAS", "shop"))


def _in_sync(replica) -> bool:
    return _client(replica).info("replication").get("master_link_status") == "up"


def _master_port(sentinel) -> int | None:
    address = _client(sentinel).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "shop")
    return int(address[1]) if address else None


def wait_for(condition, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    raise TimeoutError(_("the replication set-up did not get there in time"))


LABS = (
    Lab("C32", "failover", N_("A master/replica failover loses the lock to asynchronous "
        "replication; fencing refuses the stale holder's write"), ("A2", "A4"), ("redis",), 12,
        stage_failover),
)
