"""练习 2：给锁加上过期时间。SET NX PX：一条命令同时写入键和过期时间。

文章 A0 第 2.1 节（“如果我们的服务器突然宕机...”）、A1 和 A4：持有者崩溃后不会
删除自己的键，而没有过期时间的键会让之后的买家永远买不了（知识点 C09）。先 SETNX
再 EXPIRE 看起来能解决，但这是两条命令：两条命令之间崩溃，留下的仍是一个没有过期
时间的键（知识点 C10）。带 NX 和 PX 的 SET 一次完成这两件事。

检查：      ./run exercise check 2 lease_lock.py
（练习 1 的检查也会一起运行：通过练习 2 的锁，对练习 1 和 2 都是正确的）

可以使用（由基类 RedisLockBase 准备好）：
    self.client     连到评分程序那台 Redis 的 redis-py 客户端：.set、.get、.delete 等
    self.key        这把锁的键，"lockshop:lock:<name>"
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    self.run(script, keys, args)   在服务器上一步执行一段 Lua 脚本
评分程序会在你的持有者处于临界区时杀掉它，还会在它第一次写入键之后立即杀掉它一次：
找到这个时机不需要你的代码做任何配合。
"""

from locks.redis_support import RedisLockBase


class LeaseLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """尝试一次：锁归我们了就返回 True。这里不要等待，也不要循环。"""
        # TODO 1（A0 2.1；A1；A4 “SET NX PX”）：只在键不存在时创建它，并且设置
        # self.lease_ms 的过期时间，必须在同一条命令里完成。返回是否成功。
        raise NotImplementedError("TODO 1：SET self.key self.token NX PX self.lease_ms，"
                                  "一条命令完成（self.client.set(..., nx=True, px=...)）")

    def _release(self) -> None:
        """释放锁。"""
        # TODO 2：删除这个键（练习 3 会让它更安全）。
        raise NotImplementedError("TODO 2：删除 self.key 来释放锁")
