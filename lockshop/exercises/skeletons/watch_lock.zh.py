"""练习 9：带唯一标识的锁，释放时不用 Lua，改用 WATCH、GET、MULTI/DEL/EXEC。

文章 A2 “释放锁时验证唯一标识”：释放时由客户端自己核对唯一标识。先 GET 再 DEL
是两条命令，中间有竞态窗口（知识点 C12）：锁可能恰好在这个窗口里过期，被另一个客户端
拿到，这时 DEL 删掉的就是别人的锁。WATCH 用乐观的办法关上这个窗口：一条连接
WATCH 了某个键之后，只要这个键在 WATCH 之后被改动过，这条连接接下来的 EXEC
就会被拒绝（redis-py 抛出 redis.WatchError）。被拒绝只说明键变过，不说明键现在
是谁的：要重新读一遍，再做判断（知识点 C37）。

检查：      ./run exercise check 9 watch_lock.py
（练习 3 的唯一标识检查也会一起运行：C11、C12）

可以使用（由基类 RedisLockBase 准备好）：
    self.client     连到评分程序那台 Redis 的 redis-py 客户端
    self.key        这把锁的键，"lockshop:lock:<name>"
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒
redis-py 的事务，在同一条连接上执行：
    with self.client.pipeline() as pipe:
        pipe.watch(self.key)         # WATCH：立即执行
        value = pipe.get(self.key)   # WATCH 之后的命令也立即执行：得到 bytes 或 None
        pipe.multi()                 # 从这里开始，命令先排队……
        pipe.delete(self.key)
        pipe.execute()               # ……再作为 MULTI、DEL、EXEC 发出；被拒绝时抛出 WatchError
释放时发现“锁已经不是我的了”，就抛出 LockLost（from locks import LockLost）。
"""

import redis  # noqa: F401 - TODO 要用 redis.WatchError

from locks import LockLost  # noqa: F401 - TODO 要用
from locks.redis_support import RedisLockBase


class WatchLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """尝试一次：锁到手就返回 True（和练习 2 一样：SET NX PX）。"""
        return bool(self.client.set(self.key, self.token, nx=True, px=self.lease_ms))

    def _release(self) -> None:
        """归还锁，只在锁仍是自己的时候；否则抛出 LockLost。"""
        # TODO 1（A2）：在一个循环里，用同一个 pipeline：WATCH self.key；GET 它；如果
        # 键里不是 self.token，就 raise LockLost(self.name, "the lease expired")（原因用英文写：界面会按读者的语言显示）；否则
        # MULTI、DEL、EXEC，然后返回。EXEC 被拒绝（redis.WatchError）时回到循环开头：
        # 重新 WATCH、重新 GET，再做判断。
        raise NotImplementedError("TODO 1：用 WATCH、GET、MULTI/DEL/EXEC 释放锁，EXEC "
                                  "被拒绝时重新来一遍")
