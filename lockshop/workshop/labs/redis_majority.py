"""Labs of one Redis against a majority of five (A1, A2, A4): a single point of
failure, Redlock's majority and validity, and the server that forgets.
"""

from __future__ import annotations

import time

from locks import LockLost
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.staging.record import Lab
from lockshop.workshop.labs.redis_leases import KEY, attempt, server_client
from shop.config import Config
from lockshop.workshop.staging import steps
from shop.i18n import N_, _, yes_no

# --- C16: one Redis, or a majority of five ------------------------------------------------

def stage_redlock(run) -> None:
    run.broken("redis", _("one Redis server: it is the lock"))
    server, = run.parts.redis()
    factory = run.open_locks("redis", redis_url=server.url, lease_ms=2000)
    server.kill()
    outcome = attempt(factory.lock("product:1", timeout=0.2))
    run.check(_("the one Redis server dies; a buyer asks for the lock"),
              expected=_("no lock at all: backend unavailable (the shop answers 503)"),
              observed=steps.said(outcome), agrees=outcome.startswith("BackendUnavailable"))
    run.parts.redis()  # start it again, empty, for the next lab

    run.fix("redlock", _("five independent servers; a majority within the validity time"))
    servers = run.parts.redis(5)
    factory = run.open_locks("redlock", redis_urls=tuple(s.url for s in servers), lease_ms=2000)
    servers[0].kill()
    servers[3].kill()
    holder = factory.lock("product:1", timeout=0.2)
    outcome = attempt(holder)
    other = attempt(factory.lock("product:1", timeout=0.2))
    run.check(_("two of the five servers die; two buyers ask for the lock"),
              expected=_("the first holds it (3 of 5 said yes), the second is refused"),
              observed=_("first: %(first)s; second: %(second)s", first=steps.said(outcome),
                         second=steps.said(other)),
              agrees=outcome == "acquired" and other == "refused")
    holder.release()
    servers[1].kill()
    outcome = attempt(factory.lock("product:1", timeout=0.2))
    leftovers = sum(server_client(s).exists(KEY) for s in servers[2::2])
    run.check(_("a third server dies; a buyer asks for the lock"),
              expected=_("refused: 2 of 5 is no majority (503), nothing left on the two"),
              observed=_("%(outcome)s; keys left: %(left)s", outcome=steps.said(outcome),
                         left=leftovers),
              agrees=outcome.startswith("BackendUnavailable") and leftovers == 0)


# --- C17: a Redlock server that forgets ---------------------------------------------------------

def stage_redlock_restart(run) -> None:
    """A locks on a majority while two servers are cut off from it; one of its three
    restarts without persistence; B asks."""
    for half, how, delay_s in (
            ("broken", _("a server restarts at once after a crash, with no persistence"), 0.0),
            ("fix", _("the same server restarts only after the longest lease has run out, as "
                      "the Redlock write-up advises"), 1.6)):
        getattr(run, half)("redlock", how)
        servers = run.parts.redis(5)
        urls = tuple(s.url for s in servers)
        servers[3].stop()
        servers[4].stop()
        a = run.open_locks("redlock", redis_urls=urls, lease_ms=1500).lock("product:1")
        run.check(_("A asks for the lock while servers 4 and 5 are cut off from it"),
                  expected=_("A holds it on servers 1, 2 and 3: a majority of five"),
                  observed=_("A holds: %(held)s", held=yes_no(a.acquire(blocking=False))),
                  agrees=a.held)
        servers[3].start()
        servers[4].start()
        time.sleep(delay_s)
        servers[2].restart()  # no persistence: it comes back empty
        b = run.open_locks("redlock", redis_urls=urls, lease_ms=1500).lock("product:1")
        b_holds = b.acquire(blocking=False)
        try:
            a.ensure_held()
            a_holds = True
        except LockLost:
            a_holds = False
        observed = _("B holds: %(b)s; A still holds (its validity not over): %(a)s",
                     b=yes_no(b_holds), a=yes_no(a_holds))
        if half == "broken":
            run.check(_("server 3 crashes and restarts empty; B asks for the lock"),
                      expected=_("servers 3, 4 and 5 say yes to B: a majority, while A's is "
                                 "still valid: two holders"),
                      observed=observed, agrees=b_holds and a_holds)
        else:
            run.check(_("server 3 crashes and restarts empty, 1.6 s later; B asks for the "
                        "lock"),
                      expected=_("B gets it, but only after A's lease is over: A knows it "
                                 "lost it, one holder at a time"),
                      observed=observed, agrees=b_holds and not a_holds)


# --- C31: one Redis is a single point ------------------------------------------------------------

def stage_single_point(run) -> None:
    servers = run.parts.redis(5)
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", redis_url=servers[0].url,
                    redis_urls=tuple(s.url for s in servers), lock_timeout_ms=500)
    with Cluster(config, instances=2, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        for half, strategy, how in (
                ("broken", "redis", _("one Redis server: the lock service is one process")),
                ("fix", "redlock", _("five independent servers: any three make the lock"))):
            getattr(run, half)(strategy, how)
            admin.reset([{"sku": "x", "stock": 20}])
            admin.set_settings(strategy=run.version(strategy), business_delay_ms=0,
                               job_interval_ms=0)
            servers[0].kill()
            answers = [ShopClient(cluster.urls[n % 2]).order() for n in range(6)]
            product = admin.audit()["products"][0]
            observed = _("answers %(answers)s; oversold %(oversold)s", answers=answers,
                         oversold=product["oversold"])
            if half == "broken":
                run.check(_("the Redis server dies; 6 orders come in"),
                          expected=_("every order is refused with 503 (no lock, no sale), and "
                                     "nothing is oversold"), observed=observed,
                          agrees=answers == [503] * 6 and product["oversold"] == 0)
                run.parts.redis(5)  # the server comes back (empty)
                later = [ShopClient(cluster.urls[n % 2]).order() for n in range(2)]
                run.check(_("the Redis server comes back; 2 more orders"),
                          expected=_("sold: the shop recovers by itself, no restart"),
                          observed=str(later), agrees=later == [201, 201])
            else:
                run.check(_("one of the five servers dies; 6 orders come in"),
                          expected=_("every order is sold: four servers are still a majority"),
                          observed=observed,
                          agrees=answers == [201] * 6 and product["oversold"] == 0)
                run.parts.redis(5)


# --- C33: Redlock's validity --------------------------------------------------------------------

def stage_redlock_validity(run) -> None:
    servers = run.parts.redis(5)
    run.measure("redlock", _("five servers, a 2 s lease, 100 ms per server before it counts as "
                             "down; two, then three servers paused (SIGSTOP): they hold their "
                             "connections and answer nothing"))
    factory = run.open_locks("redlock", redis_urls=tuple(s.url for s in servers), lease_ms=2000)
    servers[0].pause()
    servers[1].pause()
    try:
        lock = factory.lock("product:1")
        held = lock.acquire(blocking=False)
        drift = 2000 * 0.01 + 2
        run.check(_("A asks for the lock with two servers paused"),
                  expected=_("granted by three; each paused server costs only its 100 ms "
                             "timeout, and the validity is the lease less that wait less the "
                             "drift"),
                  observed=_("granted: %(granted)s; acquiring took %(took)s ms; validity "
                             "%(validity)s ms = 2000 - %(took)s - %(drift)s",
                             granted=yes_no(held), took=f"{lock.elapsed_ms:.0f}",
                             validity=f"{lock.validity_ms:.0f}", drift=f"{drift:.0f}"),
                  agrees=held and 80 <= lock.elapsed_ms < 500
                  and abs(lock.validity_ms - (2000 - lock.elapsed_ms - drift)) < 1)
        lock.release()
        servers[2].pause()
        outcome = attempt(factory.lock("product:1"))
        left = sum(server_client(s).exists(KEY) for s in servers[3:])
        run.check(_("B asks with three servers paused"),
                  expected=_("refused (two of five is no majority), and the two that said yes "
                             "are unlocked at once"),
                  observed=_("%(outcome)s; keys left on the two: %(left)s",
                             outcome=steps.said(outcome.replace("：", ":").split(":")[0]), left=left),
                  agrees=outcome.startswith("BackendUnavailable") and left == 0)
    finally:
        for server in servers[:3]:
            server.resume()


LABS = (
    Lab("C16", "redlock_majority", N_("Redlock: a majority of five survives two servers down and "
        "refuses with three"), ("A1", "A4"), ("redis",), 2, stage_redlock),
    Lab("C17", "redlock_restart", N_("Redlock's weakness: a server that restarts without "
        "persistence forgets a key, and a second client gets a majority"), ("A4",), ("redis",),
        3, stage_redlock_restart),
    Lab("C31", "single_point", N_("A single Redis is a single point: while it is down nothing "
        "sells (and nothing is oversold); five Redlock servers go on"), ("A4",),
        ("redis", "instances"), 8, stage_single_point),
    Lab("C33", "redlock_validity", N_("Redlock's validity: the lease less the time spent "
        "acquiring less the drift; a short per-server timeout; a failed attempt unlocks every "
        "server"), ("A1", "A4"), ("redis",), 2, stage_redlock_validity, measured=True),
)
