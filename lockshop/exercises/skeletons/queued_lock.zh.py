"""练习 10：排队的 Redis 锁，等待者一直睡到释放时被唤醒。

文章 A1 和 A4：轮询的锁（SET NX，睡一会，再 SET NX……）在等待期间一直向 Redis 发
命令，而且不公平：谁恰好在释放之后那一刻来问，谁就拿到锁，运气不好的等待者可能
一次又一次抢不到（知识点 C34）。改为排队：被拒绝的等待者把自己的唯一标识放到一个
列表的末尾，然后用 BLPOP 睡在自己的一个列表上，BLPOP 在服务器里阻塞，直到有值被
推进这个列表。释放时删除键，再向排在队首的等待者推送一个唤醒消息；空闲的锁归队首
所有，所以等待者按先来后到拿到锁。放弃等待的等待者必须离开队列，否则锁会一直等一个
已经走了的人（知识点 C38）。

检查：      ./run exercise check 10 queued_lock.py
（练习 3 的唯一标识检查也会一起运行：C11、C12）

可以使用（由基类 RedisLockBase 和下面的 __init__ 准备好）：
    self.client     连到评分程序那台 Redis 的 redis-py 客户端
    self.key        这把锁的键，"lockshop:lock:<name>"
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒
    self.queue      队列的键：等待者唯一标识的列表，按到达顺序排列
    self.wake       这个锁自己的唤醒列表：在它上面 BLPOP；释放时 RPUSH 到
                    WAKE_PREFIX 加队首的唯一标识
    self.run(script, keys, args)   在服务器上一步执行一段 Lua 脚本
基类先调用 _try_acquire()，两次尝试之间调用 _wait_for_release(seconds)，acquire 的
超时用完时调用 _gave_up()。
释放时发现“锁已经不是我的了”，就抛出 LockLost（from locks import LockLost）。
"""

from locks import LockLost  # noqa: F401 - TODO 2 要用
from locks.redis_support import QUEUE_PREFIX, WAKE_PREFIX, RedisLockBase


class QueuedLock(RedisLockBase):

    #: 等待者在没有被唤醒时最多睡多久：只是兜底，不是轮询。
    fallback_seconds = 0.5

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.queue = QUEUE_PREFIX + name
        self.wake = WAKE_PREFIX + self.token

    # TODO 1：一段 Lua 脚本，键为 (self.key, self.queue)，参数为 (self.token, self.lease_ms)：
    # 如果锁的键不存在，并且队列为空或者队首（LINDEX queue 0）就是我们的唯一标识，就
    # 用 PX lease_ms 把键 SET 成我们的唯一标识，从队列里 LREM 掉我们，返回 1；否则，
    # 如果我们还不在队列里（LPOS），就把唯一标识 RPUSH 到队列末尾，返回 0。
    ACQUIRE = None

    # TODO 2：一段 Lua 脚本，键为 (self.key, self.queue)，参数为 (self.token, WAKE_PREFIX)：
    # 如果键里不是我们的唯一标识，返回 0；否则 DEL 它，如果队列有队首，就向
    # WAKE_PREFIX .. head 推送（RPUSH）一个唤醒消息（值随意），再 PEXPIRE 一下，免得它
    # 永远留着；返回 1。
    RELEASE = None

    def _try_acquire(self) -> bool:
        """尝试一次：锁到手就返回 True；否则我们已经在队列里。"""
        raise NotImplementedError("TODO 1：写好 ACQUIRE，用 self.run 执行")

    def _wait_for_release(self, seconds: float) -> None:
        """睡到被释放唤醒，最多睡 ``seconds`` 秒。"""
        # TODO 3：在 self.wake 上 BLPOP，超时最多 self.fallback_seconds。
        raise NotImplementedError("TODO 3：在 self.wake 上用 BLPOP 等待")

    def _gave_up(self) -> None:
        """acquire 的超时用完了：离开队列。"""
        # TODO 4：把我们的唯一标识从队列里删掉（LREM），再删除我们的唤醒列表。
        raise NotImplementedError("TODO 4：离开队列")

    def _release(self) -> None:
        """归还锁，只在锁仍是自己的时候；否则抛出 LockLost。"""
        raise NotImplementedError("TODO 2：写好 RELEASE，用 self.run 执行；返回 0 时抛出 "
                                  "LockLost")
