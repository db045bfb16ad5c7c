"""练习 22：像 Quartz 那样做任务守卫，对锁行加 SELECT ... FOR UPDATE。

文章 A1（“想办法”）：Quartz 用数据库自己的锁让集群里的调度器步调一致。调度器在
判断某个触发时刻是否已经执行之前，先对锁表里的一行加 SELECT ... FOR UPDATE，一直
持有到它的决定提交为止：其他调度器同样的 SELECT 在这里等待，然后读到这个决定。
没有行锁时，每个调度器都读到“还没执行”，每个都去执行任务（知识点 C41）。

这里的锁行是任务在 job_locks 表里的那一行（每个任务一行）：它的 fire_time 记着最近
被认领的触发时刻，locked_until 记着这次认领占住任务到什么时候（还有一次执行没结束）。
每个店铺实例都在同样的时刻触发同样的任务；每个触发时刻，在每个实例上，调度器新建
一个守卫，调用一次 take()：返回 True 就立即执行任务，返回 False 就跳过这个触发时刻
（别的实例在执行）。执行完之后它调用 give_back()，结束占用。请补全 take()。

检查：      ./run exercise check 22 quartz_guard.py
（评分程序自己建一个 MariaDB 数据库：3 个调度器同时到达同一个触发时刻，然后 3 个
店铺实例装上你的守卫触发任务）

可以使用：
    with self.engine.begin() as db:   一个事务，写成 with 块：块结束时提交（出错时
                                      回滚），行锁也就随之释放
    db.execute(text("SELECT ... WHERE job = :job ..."), {"job": ...}).scalar()
    表：        job_locks (job VARCHAR(64) PRIMARY KEY, fire_time DATETIME(6),
                           locked_until DATETIME(6), instance VARCHAR(100))
    self.job        任务名："expire_unpaid" 或 "send_reminders"
    self.fire_time  这次执行的触发时刻（datetime，每个实例上都一样）
    self.instance   这个店铺实例的名字
    self.now()      现在的时间，按表里保存的格式
    self.held_until() 现在做的认领最多占住任务到什么时候（租约）
    self.deciding() 读和写之间耗时的那一段：评分程序在检查里把调度器拦在这里，请保留它
任务的那一行在 take() 读它之前已经存在（make_lock_row 已经调用过）；give_back() 和
ensure_held() 已经写好（来自 TableGuard：认领同时把这次执行隔离开）。
"""

import time

from sqlalchemy import text  # noqa: F401 - take() 要用

from shop.jobs.guards import TableGuard, make_lock_row


class QuartzGuard(TableGuard):
    """每个触发时刻在集群里只执行一次：在任务的行锁下做决定。"""

    name = "exercise"
    #: deciding() 耗时多久：店铺里为零；评分程序在它的检查里设置。
    deciding_s = 0.0

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        super().__init__(state, job, fire_time, "exercise", clock)
        self.engine = state.engine

    def take(self) -> bool:
        """由本实例执行这个触发时刻的任务就返回 True；跳过就返回 False。"""
        make_lock_row(self.engine, self.job)
        # TODO 1（A1；C41）：在同一个事务里（with self.engine.begin() as db:），按这个顺序：
        #   用 SELECT ... FOR UPDATE 读这一行的 fire_time 和 locked_until（通过主键找到它）
        #   如果 fire_time 是这个触发时刻或更晚的（已被认领），或者 locked_until 晚于
        #   self.now()（还有一次执行占着任务）：return False
        #   self.deciding()
        #   UPDATE 这一行：fire_time = 这个触发时刻，locked_until = self.held_until()，
        #   instance = 这个实例
        #   return True
        # 块结束时的提交，才让下一个调度器进来。
        raise NotImplementedError("TODO 1：在一个事务里 SELECT fire_time FROM job_locks "
                                  "WHERE job = :job FOR UPDATE，做决定，再 UPDATE")

    def deciding(self) -> None:
        """做决定，在读和写之间：评分程序的窗口。"""
        time.sleep(self.deciding_s)
