"""Exercise 17: a lock row with an expiry, in a lock table.

Article A1 ("基于表主键唯一做分布式锁"): insert a row whose primary key is the
lock's name; the database lets exactly one insert of a name succeed, and that
one holds the lock; deleting the row releases it. Written just so, a holder that
dies before its delete (a crash, a kill, a lost connection) leaves its row, and
every later insert of that name fails: the lock is held by nobody, forever
(lesson C06). So the row carries the time its lease ends, and an acquire first
takes over a row whose lease has run out. A holder whose lease ran out may still
come back and release: it must delete only its own row, never the row of the
one who took it over (lesson C11).

Check it:   ./run exercise check 17 lock_row.py
(the grader makes a database of its own: a SQLite file, as three shop instances
share it)

The table (the base class creates it):
    lockshop_locks (name VARCHAR(200) PRIMARY KEY, owner VARCHAR(100) NOT NULL,
                    expires_at_ms BIGINT NOT NULL)

What you may use (the base class, TableLock, sets them up):
    self._engine       the grader's database, one transaction per "with" block:
                           with self._engine.begin() as db:
                               db.execute(text("... :name ..."), {"name": self.name})
                       the block commits at its end, and rolls back on an error
    self.name          this lock's name: the row's key
    self._token_owner  a value no other acquisition uses: your row's owner
    self._lease_ms     how long a lease lasts, in milliseconds
    now_ms()           the time now, in milliseconds
    IntegrityError     what an INSERT of a name already there raises
    LockLost(self.name, why)   what a release raises when the row is no longer yours
The base class reads your row back before every write of the shop (its
_still_held: a row of this name, with your owner, whose lease has not ended).
The grader kills a holder inside its section: it needs nothing from your code
to do that.
"""

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from locks import LockLost
from locks.table_lock import TableLock, now_ms


class LockRow(TableLock):

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours. Never wait or loop here."""
        # TODO 1 (A1; C06): in ONE transaction,
        #   - delete the row of this name whose lease is over (expires_at_ms <= now),
        #   - insert your row: name, owner = self._token_owner,
        #     expires_at_ms = now + self._lease_ms.
        # The insert of a name that is there raises IntegrityError: return False then.
        raise NotImplementedError("TODO 1: DELETE the expired row of self.name, then INSERT "
                                  "(name, owner, expires_at_ms); IntegrityError -> False")

    def _release(self) -> None:
        """Give the lock back."""
        # TODO 2 (C11): delete the row of this name only if its owner is yours; if that
        # deleted nothing, your lease ran out and someone took over: raise LockLost.
        raise NotImplementedError("TODO 2: DELETE ... WHERE name = :name AND owner = :owner; "
                                  "nothing deleted -> raise LockLost(self.name, ...)")
