"""练习 15：任务守卫，让定时任务在整个集群里只跑一次。

文章 A0（过期订单的库存由清理任务退回）和 A1（8 台 Tomcat，8 条短信）：每个店铺
实例都有自己的调度器，每个调度器都在同样的时刻触发同样的任务。每次执行先读出
未支付的订单，处理一会儿，再写入。任务没有守卫时，3 个实例读到同样的订单，3 个都
写入：每个订单的库存被退回 3 次（知识点 C04），每位没付款的顾客收到 3 条提醒
（C05）。未支付订单占着的库存正是靠过期任务退回（C42）：必须退回一次，不多不少。

调度器在每次执行外面套一个守卫。每个触发时刻，在每个实例上，它新建一个守卫，
调用一次 take()，不等待：返回 True 就立即执行任务，返回 False 就跳过这个触发时刻
（别的实例在执行）。执行完，而且从触发时刻算起至少过了半个间隔之后，它调用
give_back()。请补全 take() 和 give_back()。

检查：      ./run exercise check 15 job_guard.py
（3 个店铺实例装上你的守卫，把两个任务各触发两次；店铺的审计统计退回的库存和
发出的提醒）

可以使用（在下面的 __init__ 里准备好）：
    self.job        任务名："expire_unpaid" 或 "send_reminders"
    self.fire_time  这次执行的触发时刻（datetime，每个实例上都一样）
    self.strategies 店铺的锁：self.strategies.lock_factory("redis") 生成 Redis 锁
                    （评分程序那台 Redis），lock_factory("local") 生成本进程内存里的锁；
                    factory.lock(name, timeout=0) 是名为 name 的锁；
                    lock.acquire(blocking=False) 只尝试一次（锁归你了就返回 True），
                    lock.release() 释放它
锁的服务器连不上，或释放时锁已经不是你的了，锁就抛出 LockError
（from locks import LockError）。
"""

from locks import LockError  # noqa: F401 - give_back 要用
from shop.jobs.guards import JobGuard


class JobLockGuard(JobGuard):
    """每个触发时刻在集群里只执行一次：任务的锁，只尝试一次。"""

    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.job = job
        self.fire_time = fire_time
        self.strategies = state.strategies
        self.lock = None

    def take(self) -> bool:
        """由本实例执行这个触发时刻的任务就返回 True；跳过就返回 False。"""
        # TODO 1：在 self.lock 里生成任务的锁：整个集群共用一把（它该放在哪里？），
        # 按任务命名；只尝试一次，不等待，返回是否拿到。
        raise NotImplementedError("TODO 1：生成任务的锁，只尝试一次")

    def give_back(self) -> None:
        """执行完之后（执行失败也一样）：让下一个触发时刻能拿到它。"""
        # TODO 2：释放 self.lock。执行期间租约已经到期的锁不再是你的：没有什么可释放的
        # （release 抛出 LockError）。
        raise NotImplementedError("TODO 2：释放任务的锁")
