"""The lock table as the articles first write it: broken on purpose.

Read it next to ``table_lock``, which fixes it with an expiry column.
"""

from __future__ import annotations

from sqlalchemy import insert
from sqlalchemy.exc import DBAPIError, IntegrityError

from .table_lock import TableLock, TableLockFactory, _is_busy, lock_rows

#: What "no expiry" looks like in a column that must hold a time: never.
NEVER = 2**62


class NoExpiryTableLock(TableLock):
    """Insert a row with a unique key to lock, delete it to unlock; nothing else.

    Fails when the holder dies before its delete (a crash, a SIGKILL, a lost
    connection): the row stays, and every later acquire hits the unique key,
    forever, until a person deletes the row (article A1). ``TableLock`` adds
    an expiry column and takes over a row whose lease has run out.
    """

    def _try_acquire(self) -> bool:
        try:
            with self._engine.begin() as db:
                db.execute(insert(lock_rows).values(name=self.name, owner=self._token_owner,
                                                    expires_at_ms=NEVER))
            return True
        except IntegrityError:
            return False  # someone holds it, or held it and died
        except DBAPIError as error:
            if _is_busy(error):
                return False
            raise

    def _still_held(self) -> bool:
        return True  # the naive version never asks


class NoExpiryTableFactory(TableLockFactory):
    lock_class = NoExpiryTableLock
