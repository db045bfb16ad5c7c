"""练习 1：用 SETNX 加锁、用 DEL 释放的 Redis 锁。

文章 A0 第 2.1 节（“基本实现”）：锁必须对所有进程可见，并且同一时刻只能有一个
持有者。Redis 在所有进程之外；SETNX（不存在时才设置）只对第一个调用者成功，
其余调用者都得到 0。

检查：      ./run exercise check 1 setnx_lock.py

可以使用（由基类 RedisLockBase 准备好）：
    self.client     连到评分程序那台 Redis 的 redis-py 客户端：.set、.get、.delete 等
    self.key        这把锁的键，"lockshop:lock:<name>"
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒（从练习 2 开始用）
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    self.run(script, keys, args)   在服务器上一步执行一段 Lua 脚本
等待、超时、拒绝从未加锁者的释放，以及 `with` 语句，都由基类负责：你只需要写
一次加锁尝试和释放。
"""

from locks.redis_support import RedisLockBase


class SetnxLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """尝试一次：锁归我们了就返回 True。这里不要等待，也不要循环。"""
        # TODO 1（A0 2.1，“互斥”）：用 SETNX 把 self.token 写进锁的键；只有第一个
        # 调用者会得到 true。返回它是否成功。
        raise NotImplementedError("TODO 1：用 SETNX 设置 self.key 来加锁"
                                  "（self.client.setnx）")

    def _release(self) -> None:
        """释放锁。"""
        # TODO 2（A0 2.1，“释放锁”）：删除这个键，下一个调用者的 SETNX 才能成功。
        raise NotImplementedError("TODO 2：删除 self.key 来释放锁"
                                  "（self.client.delete）")
