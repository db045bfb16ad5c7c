"""Exercise 3 as students get the lease's unit wrong: right in every step but that.

``self.lease_ms`` counts milliseconds. One student turns it into seconds for PX,
which counts milliseconds (a lease a thousand times too short); another gives it
to EX, which counts seconds (a thousand times too long). Lesson C36."""

import math

from locks import LockLost
from locks.redis_support import RedisLockBase

RELEASE = """
local key, token = KEYS[1], ARGV[1]
if redis.call("GET", key) == token then
    return redis.call("DEL", key)
end
return 0
"""


class PxInSecondsLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        seconds = math.ceil(self.lease_ms / 1000)  # the mistake: PX wants milliseconds
        return bool(self.client.set(self.key, self.token, nx=True, px=seconds))

    def _release(self) -> None:
        if not self.run(RELEASE, keys=[self.key], args=[self.token]):
            raise LockLost(self.name, "the lease expired")


class ExInMillisecondsLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        # the mistake: EX counts seconds
        return bool(self.client.set(self.key, self.token, nx=True, ex=self.lease_ms))

    def _release(self) -> None:
        if not self.run(RELEASE, keys=[self.key], args=[self.token]):
            raise LockLost(self.name, "the lease expired")
