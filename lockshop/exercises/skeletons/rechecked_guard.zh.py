"""练习 16：任务守卫在每次写入前再核对一次，锁是否仍由自己持有。

文章 A2：任务的锁有过期时间，免得一个挂掉的实例永远占着它。一次执行的时间要是超过了
锁的过期时间（支付渠道慢，或一次很长的 GC 停顿），锁过期了它还在干活；下一个触发时刻，另一个
实例拿到锁，做同样的事。等第一次执行再写入时，活就做了两遍：每位没付款的顾客收到
两条提醒（知识点 C35）。执行开始时核对一次，说明不了写入那一刻的情况。

调度器在任务的每个写事务的最后调用守卫的 ensure_held(db)（db 就是这个事务）：
守卫已经不再持有时，它必须抛出 LockLost；任务随即回滚这次写入并停止。先和练习 15
一样写好 take() 和 give_back()，再写 ensure_held()。

检查：      ./run exercise check 16 rechecked_guard.py
（练习 15 的检查也会一起运行）

可以使用（在下面的 __init__ 里准备好）：
    self.job        任务名："expire_unpaid" 或 "send_reminders"
    self.fire_time  这次执行的触发时刻（datetime，每个实例上都一样）
    self.strategies 店铺的锁：self.strategies.lock_factory("redis") 生成 Redis 锁
                    （评分程序那台 Redis）；factory.lock(name, timeout=0) 是名为 name
                    的锁；lock.acquire(blocking=False) 只尝试一次，lock.release()
                    释放它，lock.ensure_held() 在锁已经不是你的时候抛出 LockLost
                    （它向 Redis 核对键里是否仍是你的唯一标识）
LockLost 和 LockError：from locks import LockError, LockLost。
"""

from locks import LockError, LockLost  # noqa: F401 - give_back 和 ensure_held 要用
from shop.jobs.guards import JobGuard


class RecheckedGuard(JobGuard):
    """每个触发时刻在集群里只执行一次，锁没了就不再写入。"""

    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.job = job
        self.fire_time = fire_time
        self.strategies = state.strategies
        self.lock = None

    def take(self) -> bool:
        """由本实例执行这个触发时刻的任务就返回 True；跳过就返回 False。"""
        # TODO 1：和练习 15 一样：任务的锁，整个集群一把，只尝试一次。
        raise NotImplementedError("TODO 1：生成任务的锁，只尝试一次")

    def ensure_held(self, db) -> None:
        """每次写入提交之前：锁不再是我们的，就抛出 LockLost。"""
        # TODO 3：现在去问锁本身，而不是看 take() 当时的结果。
        raise NotImplementedError("TODO 3：任务的锁不再持有时抛出 LockLost")

    def give_back(self) -> None:
        """执行完之后（执行失败也一样）：让下一个触发时刻能拿到它。"""
        # TODO 2：和练习 15 一样：释放 self.lock；丢掉的锁没有什么可释放的。
        raise NotImplementedError("TODO 2：释放任务的锁")
