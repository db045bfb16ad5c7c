"""练习 13：ZooKeeper 读写锁。

文章 A3（“共享锁”）：读者和写者在锁的父节点下排成同一个临时顺序节点队列，
节点名是 “read-…” 和 “write-…”。写锁就是练习 8 的公平锁；读锁只改了它的算法里
的两步：

    3 如果 C 中没有比 n 小的写节点，退出（锁归我们）
    4 p = C 中排在 n 前面、离它最近的写节点

于是一起排队的读者一起持有锁（知识点 C21）；写者要等它前面的所有节点，读者也算；
在写者等待期间到来的读者排在写者后面：源源不断的读者饿不死写者（知识点 C39）。
你只需要写一件事：一个节点拿到锁之前，要等哪些节点先消失。排队、监听、再看一次、交接和清理，
都由项目的公平锁（locks/zk_fair.py 的 ZkFairLock）完成，下面两个类继承它。

店铺卖货时加写锁；盘点（GET /api/products/<id>/stocktake）时加读锁：盘点不能看到
卖了一半的状态，但不必挡住别的盘点。

检查：      ./run exercise check 13 rw_lock.py

可以使用（其余由 locks/zk_fair.py 的 ZkFairLock 完成）：
    blockers(children, mine)   ``mine`` 持有锁之前必须消失的节点：``children`` 是
                               所有子节点的名字，按队列顺序排好；``mine`` 是我们的
                               节点（"read-<guid>-0000000007"）。返回 [] 时锁归我们；
                               否则我们监听返回值里的最后一个。
    hands_over                 True：释放时，持有者告诉紧挨在它后面的节点“锁归你了”，
                               那个等待者不再看队列，直接进入。
    _still_held()              ZkFairLock 自带：问 ZooKeeper 你的节点是否还在、是否属于
                               你的会话（店铺写入之前会问）。
"""

from locks.zk_fair import ZkFairLock

ROOT = "/lockshop/exercise-rw"


class ReadLock(ZkFairLock):
    root = ROOT
    kind = "read"
    # TODO 3（C21）：读者能把锁交接给它后面的等待者吗？别的读者可能还和你一起持有锁：
    # 被告知“锁归你了”的写者会和它们同时持锁。在这里设置 hands_over。

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """读者要等的节点：排在它前面的写者，不管是持有锁的还是在等待的。"""
        # TODO 2（A3 第 3、4 步；C21、C39）：``mine`` 前面、名字以 "write-" 开头的节点。
        # 不只是持有锁的写者：正在等待的写者也算。
        raise NotImplementedError("TODO 2：读者的 blockers：排在它前面的每一个写者")


class WriteLock(ZkFairLock):
    root = ROOT
    kind = "write"
    read_lock_class = ReadLock  # 店铺的读者用这个类

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """写者要等的节点。"""
        # TODO 1（A3，排他锁）：``mine`` 前面的所有节点，读者和写者都算。
        raise NotImplementedError("TODO 1：写者的 blockers：排在它前面的所有节点")
