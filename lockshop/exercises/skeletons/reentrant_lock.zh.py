"""练习 4：可重入锁：一个“所有者 → 次数”的哈希，每一步都是一段 Lua 脚本。

文章 A0 第 2.3 节（“重入性”）和第 2.4 节（“Lua 脚本”）：持有者调用的代码再次获取
同一把锁时，不能等它自己（知识点 C13）。所以键改成一个哈希：字段是所有者，值是它
进入的次数。

    加锁：键不存在，或者哈希里已经有我们这个所有者时：
          HINCRBY key owner 1，PEXPIRE key lease；否则拒绝。
    释放：哈希里没有我们这个所有者，说明锁已经过期（LockLost）；
          否则 HINCRBY key owner -1；减到 0 就 DEL 这个键，否则再 PEXPIRE 一次。

内层释放直接 DEL 整个键，外层的临界区就没有锁了（知识点 C27）；用 EXISTS、HSET、
EXPIRE 多条命令实现可重入加锁，可能让两个所有者同时持锁（知识点 C28）：每一步都
必须是一段 Lua 脚本。所有者就是 self.owner：每个线程第一次请求时生成，绝不会交给
别的线程。文章里的 “threadId” 在 Python 里并不安全：Python 会把已结束线程的线程号
分给下一个线程（知识点 C49）。

检查：      ./run exercise check 4 reentrant_lock.py
（练习 1 到 3 的检查也会一起运行）

可以使用（由基类 RedisLockBase 准备好）：
    self.client、self.key、self.lease_ms、self.owner（见上）
    self.run(script, keys, args)   在服务器上一步执行一段 Lua 脚本
    reentrant = True               告诉基类：持有者可以再次进入
    self._still_held()             覆盖它：我们的所有者还在哈希里吗？
"""

from locks import LockLost  # noqa: F401 - TODO 3 要用
from locks.redis_support import RedisLockBase


class ReentrantLock(RedisLockBase):
    reentrant = True

    # TODO 1（A0 2.3 “获取锁的步骤”）：加锁脚本。在开头写：
    #     local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    # 返回新的次数；别的所有者持有锁时返回 0。
    ACQUIRE = None

    # TODO 2（A0 2.3 “释放锁的步骤”）：释放脚本：哈希里没有我们的所有者时返回 -1，
    # 否则次数减一；减到 0 就 DEL，否则 PEXPIRE；返回剩下的次数。
    RELEASE = None

    def _try_acquire(self) -> bool:
        """尝试一次（或再次进入）：锁现在归我们就返回 True。"""
        raise NotImplementedError("TODO 1：写出 ACQUIRE，用 keys=[self.key]、"
                                  "args=[self.owner, self.lease_ms] 执行它")

    def _release(self) -> None:
        """释放一次：次数减一；减到 0 时锁才真正释放。"""
        # TODO 3：执行 RELEASE；返回负数说明锁已经过期：
        # raise LockLost(self.name, "the lease expired")（原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 2 和 3：写出 RELEASE 并执行它；哈希里没有我们的"
                                  "所有者时抛出 LockLost")

    def _still_held(self) -> bool:
        # TODO 4：我们的所有者还是哈希的一个字段吗？（self.client.hexists）
        raise NotImplementedError("TODO 4：_still_held：HEXISTS self.key self.owner")
