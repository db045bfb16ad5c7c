"""练习 6：店铺写入时会检查的防护令牌。

文章 A4 和它引用的那场争论（Kleppmann，“How to do distributed locking”）：持有者
的整个进程被暂停（一次长时间的 GC、SIGSTOP、内存换页）超过过期时间时，它的看门狗
也一起被暂停。锁过期了，另一个持有者拿到锁并写入，随后第一个持有者醒来，也写入了，
完全不知道时间已经过去：它的写入覆盖了另一个持有者的写入，那一笔销售就丢了
（丢失更新，知识点 C15）。写入之前的任何检查都堵不住这个漏洞，因为暂停可能发生在检查之后。必须由存储拒绝迟到的写入：
每次加锁都发放一个只增不减的数字（*防护令牌*），店铺只接受比这个商品上次见过的
令牌更新的写入。

从你的练习 5 开始：练习 1 到 5 的检查也会一起运行。然后在每次新加锁时发放防护令牌。

检查：      ./run exercise check 6 fenced_lock.py

可以使用（由基类 RedisLockBase 准备好）：
    self.client、self.key、self.lease_ms、self.owner、self.run(script, keys, args)
    self._fencing_token   拿到锁时设置它：基类把它作为 lock.fencing_token 交出去，
                          店铺用它写入
    这把锁的计数器键："lockshop:fence:" + self.name（对它执行 INCR）
"""

from locks import LockLost  # noqa: F401
from locks.redis_support import RedisLockBase
from locks.watchdog import LeaseWatchdog  # noqa: F401


class FencedLock(RedisLockBase):
    reentrant = True

    ACQUIRE = None   # 来自练习 5（TODO 1：在下面扩展它）
    RELEASE = None   # 来自练习 5
    RENEW = None     # 来自练习 5

    # TODO 1：一次新的持有开始时（次数变成 1），在同一段脚本里对防护令牌计数器执行
    # INCR，并返回次数和防护令牌，例如 {count, token}（Lua 表返回到 Python 是一个列表）。

    def _try_acquire(self) -> bool:
        # TODO 2：用 keys=[self.key, "lockshop:fence:" + self.name] 执行 ACQUIRE；
        # 新的持有开始时，把脚本返回的防护令牌转成 int 存进 self._fencing_token；
        # 再和练习 5 一样启动看门狗。
        raise NotImplementedError("TODO 1 和 2：和练习 5 一样加锁，并保存脚本发放的"
                                  "防护令牌")

    def _release(self) -> None:
        raise NotImplementedError("TODO 3：和练习 5 一样释放")

    def _still_held(self) -> bool:
        raise NotImplementedError("TODO 4：和练习 5 一样写 _still_held")
