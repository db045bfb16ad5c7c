"""练习 3：每个持有者一个唯一标识，释放时只删除自己的锁。

文章 A0 第 2.2 节（“互斥性”）和 A2（唯一标识，避免客户端误删别人的锁）：A 的
锁已经过期而它还在执行业务，B 拿到了锁，接着 A 执行完，用 DEL 删掉的却是 B 的锁。
C 随即进来，B 和 C 同时持有锁（知识点 C11）。先用 GET 核对唯一标识再 DEL，是
两条命令，中间有竞态窗口：锁可能恰好在这个窗口里过期（知识点 C12）。Lua 脚本在服务器
上一步执行完：在脚本里核对并删除。

检查：      ./run exercise check 3 token_lock.py
（练习 1 和 2 的检查也会一起运行）

可以使用（由基类 RedisLockBase 准备好）：
    self.client     连到评分程序那台 Redis 的 redis-py 客户端
    self.key        这把锁的键，"lockshop:lock:<name>"
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    self.run(script, keys, args)   在服务器上一步执行一段 Lua 脚本：
                    脚本里的 KEYS[1] 是 keys[0]，ARGV[1] 是 args[0]，依此类推
释放时发现“锁已经不是我的了”，就抛出 LockLost（from locks import LockLost）。
"""

from locks import LockLost  # noqa: F401 - TODO 2 要用
from locks.redis_support import RedisLockBase


class TokenLock(RedisLockBase):

    # TODO 2（A2；A4 “释放锁”）：一段 Lua 脚本，只有键里仍是我们的唯一标识时才删除
    # 这个键。在脚本开头给键和参数起名：
    #     local key = KEYS[1]
    #     local token = ARGV[1]
    # 然后比较 redis.call("GET", key) 和 token：相同就 DEL 并返回 1，否则返回 0。
    RELEASE = None

    def _try_acquire(self) -> bool:
        """尝试一次：锁归我们了就返回 True。这里不要等待，也不要循环。"""
        # TODO 1：和练习 2 一样：SET self.key self.token NX PX self.lease_ms。
        raise NotImplementedError("TODO 1：SET self.key self.token NX PX self.lease_ms")

    def _release(self) -> None:
        """释放锁，但只在锁仍属于我们时释放；否则抛出 LockLost。"""
        # TODO 3：用 keys=[self.key]、args=[self.token] 执行 RELEASE；如果什么也没删，
        # 说明锁已经过期：raise LockLost(self.name, "the lease expired")
        # （原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 2 和 3：写出 RELEASE（在 Lua 里核对并删除），"
                                  "再用 self.run 执行它")
