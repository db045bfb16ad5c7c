"""Cluster-wide settings: one row per key in the ``settings`` table.

Every instance reads them on every order, so switching the strategy once
switches the whole cluster at once (there is no cache to go stale). The read
is one small SELECT in the transaction that checks the order anyway.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from shop.store.db import begin_writing
from shop.store.models import JobFence, Product, Setting

MAX_BUSINESS_DELAY_MS = 10_000
#: What guards the scheduled jobs: the current strategy's lock, or ZooKeeper leader election.
JOB_GUARDS = ("strategy", "leader")
#: The bound for every job timing setting (a day).
MAX_JOB_MS = 86_400_000


@dataclass(frozen=True)
class ClusterSettings:
    strategy: str
    business_delay_ms: int
    #: Scheduled jobs (shop.scheduler): how often they fire (0: never), what guards
    #: them, when an unpaid order expires and when it gets a reminder.
    job_guard: str = "strategy"
    job_interval_ms: int = 5000
    unpaid_expiry_ms: int = 60_000
    reminder_after_ms: int = 20_000
    #: A job's lock is held at least this long (ShedLock's lockAtLeastFor), so
    #: that an instance whose clock is late cannot run the same fire time again;
    #: -1 means half the interval.
    job_lock_at_least_ms: int = -1

    @classmethod
    def from_config(cls, config) -> ClusterSettings:
        return cls(config.strategy, config.business_delay_ms, config.job_guard,
                   config.job_interval_ms, config.unpaid_expiry_ms, config.reminder_after_ms)

    @property
    def job_hold_at_least_ms(self) -> int:
        if self.job_lock_at_least_ms < 0:
            return self.job_interval_ms // 2
        return self.job_lock_at_least_ms

    def as_dict(self) -> dict:
        return asdict(self)


EVERY_SETTING = select(Setting.key, Setting.value)
SETTING_NAMES = frozenset(field.name for field in fields(ClusterSettings))


def read_settings(db: Connection | Session, defaults: ClusterSettings) -> ClusterSettings:
    """The stored settings, each of its default's type; the defaults where none is stored."""
    return replace(defaults, **{key: type(getattr(defaults, key))(value)
                                for key, value in db.execute(EVERY_SETTING)
                                if key in SETTING_NAMES})


def write_settings(session: Session, **values: object) -> None:
    """Store the given settings; keys not given keep their values.

    Call it first thing in its transaction: on SQLite it takes the write lock
    up front, as a transaction that reads and then writes must, or it fails at
    once whenever another instance wrote in between (the job schedulers write
    often).
    """
    begin_writing(session)
    for key, value in values.items():
        if value is None:
            continue
        row = session.get(Setting, key)
        if key == "strategy" and (row is None or row.value != str(value)):
            start_fencing_afresh(session)
        if row is None:
            session.add(Setting(key=key, value=str(value)))
        else:
            row.value = str(value)


def start_fencing_afresh(session: Session) -> None:
    """Forget the last fencing token written for each product, and handed in for each job.

    Each lock service counts its own tokens (a Redis counter, a ZooKeeper
    zxid, a database sequence): a token from one means nothing to another,
    and a new strategy's first token may well be smaller than the old one's
    last, which would refuse every write as stale.
    """
    session.execute(update(Product).values(fence=0))
    session.execute(delete(JobFence))


def seed_settings(sessions: sessionmaker[Session], defaults: ClusterSettings) -> None:
    """Write the defaults where no instance has written anything yet."""
    try:
        with sessions.begin() as session:
            begin_writing(session)
            present = set(session.execute(select(Setting.key)).scalars())
            for key, value in defaults.as_dict().items():
                if key not in present:
                    session.add(Setting(key=key, value=str(value)))
    except IntegrityError:
        pass  # another instance seeded them at the same moment: theirs stand
