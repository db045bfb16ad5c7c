"""Labs of the database's own locks, on MariaDB's InnoDB (A1): what ``SELECT ...
FOR UPDATE`` locks, how long it holds, and Quartz's lock row.

They need a MariaDB (or MySQL) server: this machine's, on 127.0.0.1:3306 as
root, unless ``LOCKSHOP_MYSQL_URL`` names another; each lab creates a
scratch database and drops it. Where no server answers they are skipped,
and say why.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from lockshop.cluster.scratch import DEFAULT_SERVERS, scratch_database, server_error
from lockshop.workshop.staging.record import Lab
from shop.i18n import N_, _


@contextmanager
def mariadb(run) -> Iterator[Engine]:
    """A scratch database on the machine's MariaDB; the lab is skipped without one."""
    admin_url = os.environ.get("LOCKSHOP_MYSQL_URL") or DEFAULT_SERVERS["mysql"]
    why = server_error(admin_url)
    if why is not None:
        run.skip(_("no MariaDB server answers at %(url)s (%(why)s)", url=admin_url, why=why))
    with scratch_database(admin_url, prefix="lockshop_lab") as url:
        engine = create_engine(url, isolation_level="REPEATABLE READ")  # InnoDB's default
        try:
            yield engine
        finally:
            engine.dispose()


# --- C08: FOR UPDATE, with and without a unique index ----------------------------------------

#: What the second sale's FOR UPDATE did, as the observation says it.
SALE_OF_P7 = {"locked it": N_("the sale of p7 locked it after %(waited)s s"),
              "timed out": N_("the sale of p7 timed out after %(waited)s s")}


def stage_for_update_index(run) -> None:
    with mariadb(run) as engine:
        for half, how, index in (
                ("broken", _("SELECT ... WHERE sku = ? FOR UPDATE, sku not indexed"), ""),
                ("fix", _("the same query, with a unique index on sku"), "UNIQUE KEY (sku)")):
            getattr(run, half)("for_update", how)
            with engine.begin() as db:
                db.execute(text("DROP TABLE IF EXISTS goods"))
                comma = ", " if index else ""
                db.execute(text("CREATE TABLE goods (id INT AUTO_INCREMENT PRIMARY KEY, "
                                f"sku VARCHAR(32) NOT NULL, stock INT NOT NULL{comma}{index}) "
                                "ENGINE=InnoDB"))
                db.execute(text("INSERT INTO goods (sku, stock) VALUES "
                                + ", ".join(f"('p{n}', 10)" for n in range(1, 21))))
            with engine.connect() as first, engine.connect() as second:
                first.begin()
                first.execute(text("SELECT stock FROM goods WHERE sku = 'p1' FOR UPDATE"))
                second.execute(text("SET SESSION innodb_lock_wait_timeout = 1"))
                second.commit()  # the SET began a transaction of its own
                second.begin()
                started = time.monotonic()
                try:
                    second.execute(text("SELECT stock FROM goods WHERE sku = 'p7' FOR UPDATE"))
                    outcome = "locked it"
                except OperationalError:
                    outcome = "timed out"
                waited = time.monotonic() - started
                second.rollback()
                first.rollback()
            observed = _(SALE_OF_P7[outcome], waited=f"{waited:.2f}")
            action = _("a sale holds p1 FOR UPDATE; another sale asks for p7, a different "
                       "product")
            if half == "broken":
                run.check(action, expected=_("p7 waits for p1's sale (1 s, then a lock wait "
                                             "timeout): with no index, InnoDB locked every "
                                             "row it scanned"),
                          observed=observed, agrees=outcome == "timed out")
            else:
                run.check(action, expected=_("p7 is locked at once: the index finds one row, "
                                             "and only that row is locked"), observed=observed,
                          agrees=outcome == "locked it" and waited < 0.5)


# --- C40: a lock released before the commit ----------------------------------------------------

def stage_release_before_commit(run) -> None:
    server, = run.parts.redis()
    factory = run.open_locks("redis", redis_url=server.url, lease_ms=10_000)
    with mariadb(run) as engine:
        for half, how, release_first in (
                ("broken", _("lock; read; write; release the lock; then commit"), True),
                ("fix", _("lock; read; write; commit; then release the lock"), False)):
            getattr(run, half)("redis + MariaDB", how)
            with engine.begin() as db:
                db.execute(text("DROP TABLE IF EXISTS goods"))
                db.execute(text("CREATE TABLE goods (id INT PRIMARY KEY, stock INT NOT NULL) "
                                "ENGINE=InnoDB"))
                db.execute(text("INSERT INTO goods VALUES (1, 5)"))
            b_read: list[int] = []
            b_has_read = threading.Event()

            def buyer_b() -> None:
                lock = factory.lock("product:1", timeout=10)
                lock.acquire()
                with engine.begin() as db:
                    stock = db.execute(text("SELECT stock FROM goods WHERE id = 1")).scalar()
                    b_read.append(stock)
                    b_has_read.set()
                    db.execute(text("UPDATE goods SET stock = :s WHERE id = 1"),
                               {"s": stock - 1})
                lock.release()

            lock = factory.lock("product:1")
            lock.acquire()
            with engine.connect() as db:
                db.begin()
                stock = db.execute(text("SELECT stock FROM goods WHERE id = 1")).scalar()
                db.execute(text("UPDATE goods SET stock = :s WHERE id = 1"), {"s": stock - 1})
                second = threading.Thread(target=buyer_b)
                if release_first:
                    lock.release()
                    second.start()
                    # A commits only once B has the lock and has read: the window, forced
                    # (B's write then waits for A's row lock, and overwrites A's decrement).
                    b_has_read.wait(30)
                    db.commit()
                else:
                    second.start()
                    time.sleep(0.3)  # B waits for the lock meanwhile
                    db.commit()
                    lock.release()
                second.join()
            with engine.connect() as db:
                final = db.execute(text("SELECT stock FROM goods WHERE id = 1")).scalar()
            observed = _("A read 5 and wrote 4; B read %(read)s; stock now %(stock)s",
                         read=b_read[0], stock=final)
            action = _("A and B each sell one unit of 5 under the lock")
            if half == "broken":
                run.check(action, expected=_("B reads the old stock (A had not committed) and "
                                             "writes 4 too: two sold, one decrement lost"),
                          observed=observed, agrees=b_read[0] == 5 and final == 4)
            else:
                run.check(action, expected=_("B reads A's committed 4 and writes 3"),
                          observed=observed, agrees=b_read[0] == 4 and final == 3)


# --- C41: Quartz's lock row ------------------------------------------------------------------

SCHEDULERS = 3


def stage_lock_row_scheduling(run) -> None:
    with mariadb(run) as engine:
        with engine.begin() as db:
            db.execute(text("CREATE TABLE qrtz_locks (lock_name VARCHAR(40) PRIMARY KEY) "
                            "ENGINE=InnoDB"))
            db.execute(text("INSERT INTO qrtz_locks VALUES ('TRIGGER_ACCESS')"))
            db.execute(text("CREATE TABLE fired (fire_time INT, scheduler INT) ENGINE=InnoDB"))
        for half, how, row_lock in (
                ("broken", _("each scheduler checks whether the fire time ran, and runs it"),
                 False),
                ("fix", _("each first takes SELECT ... FROM qrtz_locks WHERE lock_name = "
                          "'TRIGGER_ACCESS' FOR UPDATE, as Quartz's clustered JobStore does"),
                 True)):
            getattr(run, half)("quartz", how)
            fire_time = 1 if half == "broken" else 2
            start = threading.Barrier(SCHEDULERS)
            looked = threading.Barrier(SCHEDULERS)

            def scheduler(number: int) -> None:
                start.wait()
                with engine.begin() as db:
                    if row_lock:
                        db.execute(text("SELECT lock_name FROM qrtz_locks WHERE lock_name = "
                                        "'TRIGGER_ACCESS' FOR UPDATE"))
                    ran = db.execute(text("SELECT COUNT(*) FROM fired WHERE fire_time = :t"),
                                     {"t": fire_time}).scalar()
                    if not row_lock:
                        # The window, forced: every scheduler has looked before any decides
                        # (a connection opened late would otherwise see the first one's run).
                        looked.wait()
                    time.sleep(0.1)  # deciding, and starting the job
                    if not ran:
                        db.execute(text("INSERT INTO fired VALUES (:t, :n)"),
                                   {"t": fire_time, "n": number})

            threads = [threading.Thread(target=scheduler, args=(n,)) for n in range(SCHEDULERS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            with engine.connect() as db:
                runs = db.execute(text("SELECT COUNT(*) FROM fired WHERE fire_time = :t"),
                                  {"t": fire_time}).scalar()
            action = _("%(schedulers)s schedulers reach the same fire time at once",
                       schedulers=SCHEDULERS)
            if half == "broken":
                run.check(action, expected=_("each finds it not run yet: %(runs)s runs",
                                             runs=SCHEDULERS),
                          observed=_("%(runs)s run(s)", runs=runs), agrees=runs == SCHEDULERS)
            else:
                run.check(action, expected=_("one at a time through the lock row: 1 run"),
                          observed=_("%(runs)s run(s)", runs=runs), agrees=runs == 1)


LABS = (
    Lab("C08", "for_update_index", N_("SELECT ... FOR UPDATE locks one row only through a "
        "unique index; without one InnoDB locks far more"), ("A1",), ("mariadb",), 4,
        stage_for_update_index),
    Lab("C40", "release_before_commit", N_("A lock released before the commit lets the next "
        "buyer read the old stock"), ("A1",), ("mariadb", "redis"), 2,
        stage_release_before_commit),
    Lab("C41", "quartz_lock_row", N_("Cluster scheduling by a lock row, as Quartz does: one run "
        "per fire time"), ("A1",), ("mariadb",), 2, stage_lock_row_scheduling),
)
