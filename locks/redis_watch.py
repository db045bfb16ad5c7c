"""The token lock released the optimistic way: ``WATCH``, ``GET``, ``MULTI``/``DEL``/``EXEC``.

Article A2's release, with no Lua: the client checks the token itself, and
Redis makes the delete conditional on the key not having changed since.

acquire
    ``SET key token NX PX lease``, as ``RedisLock``.
release
    1. ``WATCH`` the key: from now on, any change to it (a new holder's SET,
       an expiry, a renewal) makes this connection's next ``EXEC`` refused;
    2. ``GET`` it: if it no longer holds our token, the lease ran out and the
       lock is another's, or nobody's: leave it and say ``LockLost``;
    3. ``MULTI``, ``DEL``, ``EXEC``: the delete runs only if nothing touched
       the key since the ``WATCH``;
    4. ``EXEC`` refused (``WatchError``): something touched the key between
       our ``GET`` and our ``EXEC``. That says nothing about whose it is now:
       go back to 1 and read it again. Giving up here would leave our own key
       behind (after a mere renewal) until its lease ends; deleting without a
       new read could delete the next holder's key.

What it costs: three round trips where Lua needs one, and a retry on every
conflict (lesson C37, measured in the workshop). The Lua release
(``RedisLock``) is the better tool; this one shows what it saves.
"""

from __future__ import annotations

import redis

from .errors import LockLost
from .redis_lock import RedisLock


class WatchReleaseLock(RedisLock):
    """``RedisLock`` whose release is WATCH/GET/MULTI/DEL/EXEC, retried on a conflict."""

    def _release(self) -> None:
        with self.client.pipeline() as pipe:
            while True:  # as the article's: a refusal is rare (a renewal, an expiry)
                try:
                    pipe.watch(self.key)
                    if pipe.get(self.key) != self.token.encode():
                        raise LockLost(self.name,
                                       f"the {self.lease_ms} ms lease expired before release")
                    pipe.multi()
                    pipe.delete(self.key)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue  # the key changed after our GET: read it again

