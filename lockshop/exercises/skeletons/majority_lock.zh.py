"""练习 11：Redlock，一把锁横跨五台独立的 Redis 服务器。

文章 A1 和 A4：一台 Redis 是单点。Redlock 向五台独立的服务器发出
SET key token NX PX lease；多数（五台中的三台）答应了，锁才算到手，所以两台宕机
照样能加锁，三台宕机就拒绝（知识点 C16）。发请求要花时间，不回答的服务器只能耗掉
一个很短的超时，不能耗掉整个租约：锁的有效时间是租约减去加锁用时，再减去服务器
之间时钟漂移的余量（租约的 1% 再加 2 毫秒）；加锁失败时要在所有节点上释放锁，因为
有的节点可能已经答应了（知识点 C33）。一台服务器不带持久化重启，会忘掉这个键，
第二个客户端就可能在第一个还持有锁时拿到多数（知识点 C17）：Redlock 的说明要求
崩溃的服务器先等一个租约再回来，持有者也不能在有效时间过后还相信自己的锁。

检查：      ./run exercise check 11 majority_lock.py

可以使用（由基类 RedlockBase 准备好）：
    self.clients    每台服务器一个 redis-py 客户端（按下面的 server_timeout 创建）
    self.quorum     需要多少台答应：len(self.clients) // 2 + 1
    self.key        这把锁的键，"lockshop:lock:<name>"，每台服务器上都一样
    self.token      其他任何一次加锁都不会用到的值（每个锁对象一个新值）
    self.lease_ms   租约时长，单位毫秒
    self._clock()   单调时钟，单位秒
    fan_out(self.clients, *command)   把一条命令同时发给每台服务器，再读回每台的
                    回答：一个列表，每台一项，没有及时回答的服务器是 UNREACHABLE
                    （SET NX 的回答是 b"OK" 或 None）
    COMPARE_AND_DELETE  只在键里是这个唯一标识时才删除键的 Lua 脚本：
                    fan_out(self.clients, "EVAL", COMPARE_AND_DELETE, 1, self.key, self.token)
                    删除成功的那台回答 1
BackendUnavailable(self.name, "redis") 表示能回答的服务器太少。
"""

from locks import BackendUnavailable, LockLost  # noqa: F401 - TODO 要用
from locks.redis_lock import RedisLock
from locks.redlock import UNREACHABLE, RedlockBase, fan_out  # noqa: F401 - TODO 要用

COMPARE_AND_DELETE = RedisLock.COMPARE_AND_DELETE
CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_MS = 2


class MajorityLock(RedlockBase):

    # TODO 4：一台服务器最多可以花多久回答，超过就当它宕机，单位秒。默认的 2 秒是单台
    # Redis 锁用的：和 2 秒的租约相比长得太多。工厂按它创建 self.clients。
    server_timeout = 2.0

    def _try_acquire(self) -> bool:
        """在每台服务器上尝试一次：多数及时答应了就返回 True。"""
        # TODO 1：记下时钟；用 fan_out 发出 SET self.key self.token NX PX self.lease_ms；
        # elapsed 是这一步花的时间；validity = 租约 - elapsed - 漂移（漂移：租约乘以
        # CLOCK_DRIFT_FACTOR，再加 CLOCK_DRIFT_MS）。如果至少 self.quorum 台答应了，并且
        # validity 大于 0，就记下有效时间在什么时候结束（self._valid_until），返回 True。
        # 否则在所有节点上删除自己的唯一标识（通过 fan_out 执行 COMPARE_AND_DELETE），
        # 返回 False。
        raise NotImplementedError("TODO 1：问遍每台服务器，数答应的台数，算出有效时间；"
                                  "失败时在所有节点上释放锁")

    def _release(self) -> None:
        """在每台服务器上归还锁；持有它的不到多数时抛出 LockLost。"""
        # TODO 2：在每台服务器上执行 COMPARE_AND_DELETE；数回答 1 的台数；不到
        # self.quorum 台就 raise LockLost(self.name, "the lease expired")
        # （原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 2：在每台服务器上核对并删除")

    def _still_held(self) -> bool:
        """这把锁是否还能信任（店铺写入之前会问）。"""
        # TODO 3：只在你算出的有效时间结束之前返回 True。
        raise NotImplementedError("TODO 3：只在有效时间内算持有")
