"""练习 5：持有者活着时不断续期的看门狗。

文章 A4（Redisson 的“看门狗”）：过期时间短，持有者挂掉后锁很快就能释放；业务执行
时间长，又需要长的过期时间。Redisson 的看门狗两者兼顾：过期时间保持很短，持有者的
一个线程在持锁期间每隔三分之一个过期时间就续期一次。持有者挂掉，看门狗也随之停止，
锁在一个过期时间之后自动释放（知识点 C14、C36）。

从你的练习 4 开始（把它的脚本和方法复制过来）：练习 1 到 4 的检查也会一起运行。
然后加上看门狗。

检查：      ./run exercise check 5 watchdog_lock.py

可以使用（由基类 RedisLockBase 准备好）：
    self.client、self.key、self.lease_ms、self.owner、self.run(script, keys, args)
    locks.watchdog.LeaseWatchdog(name, renew, interval)：一个线程，每隔 interval 秒
        调用一次 renew()，直到调用 .stop()，或者 renew() 返回 False（这时
        .lost_reason 说明原因）。你也可以自己写这个线程。
    self.held       在 _release 里，如果这是该对象的最后一次释放，它为 False
"""

from locks import LockLost  # noqa: F401
from locks.redis_support import RedisLockBase
from locks.watchdog import LeaseWatchdog  # noqa: F401 - TODO 2 要用


class WatchdogLock(RedisLockBase):
    reentrant = True

    ACQUIRE = None   # TODO 1：来自练习 4
    RELEASE = None   # TODO 1：来自练习 4

    # TODO 2（A4，“每隔 10s 帮你把 Key 的超时时间设为 30s”）：一段续期脚本，只在哈希
    # 里仍有我们的所有者时才续期：
    #     local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    #     HEXISTS key owner 为真就 PEXPIRE key lease_ms 并返回 1，否则返回 0
    RENEW = None

    def _try_acquire(self) -> bool:
        # TODO 3：和练习 4 一样加锁；如果这个对象刚刚拿到锁（之前并不持有），启动一个
        # 看门狗，每隔 lease_ms / 3 续期一次。
        raise NotImplementedError("TODO 1 和 3：和练习 4 一样加锁，然后启动看门狗")

    def _release(self) -> None:
        # TODO 4：在这个对象的最后一次释放时（not self.held），先停掉看门狗；
        # 再和练习 4 一样释放。
        raise NotImplementedError("TODO 4：先停掉看门狗，再和练习 4 一样释放")

    def _still_held(self) -> bool:
        # TODO 5：续期失败过就返回 False；否则和练习 4 一样用 HEXISTS 判断。
        raise NotImplementedError("TODO 5：_still_held：没有续期失败过，并且我们的所有者"
                                  "还在哈希里")
