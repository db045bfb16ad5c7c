"""练习 12：ZooKeeper 的重入：节点里记下所有者。

文章 A0（第 3 节，“可重入”）：客户端创建节点时，把自己的主机和线程信息写进节点；
下次想获取锁时，和当前最小节点里的数据对比一下：一样，锁就已经是自己的；不一样，
就创建一个临时顺序节点去排队。A4 在 Curator 的 InterProcessMutex 里讲的是同一件事
（知识点 C29）。

从你的练习 8（公平锁）开始：队列、只监听排在前面的那个节点、再看一次、放弃时清理
节点（下面的 TODO 1 到 5 与练习 8 相同）。然后加上重入：

    加锁：排队之前，先读最小节点的数据：如果是 self.owner，锁已经是你的了：重入
          次数加一，返回 True，不要再建节点（你自己的新节点会永远排在你自己后面）；
    释放：重入次数减一；减到零才删除节点（C27）。

所有者是 self.owner：每个线程（或 asyncio 任务）一个，从不交给别人（C49）。
所有者不能是会话：一个进程的所有线程共用一个会话，按“我的会话的节点”判断，会让这个
进程的每个线程都进来。也不能只看本地内存：会话过期后你的节点已经没了，别的
所有者可能已经持有锁，这时再重入，就和它同时持锁了。

检查：      ./run exercise check 12 reentrant_queue_lock.py
（练习 7 和 8 的检查也会一起运行）

可以使用（由基类 ZooKeeperLockBase 准备好）：
    self.client     一个 kazoo 客户端：.create(path, value, ephemeral=True, sequence=True,
                    makepath=True) 返回它创建的路径；.get_children(path)；
                    .get(path) 返回 (data, stat)；.exists(path, watch=callback)；
                    .delete(path)
    self.parent     这把锁的队列："/lockshop/exercise-reentry/<name>"（在下面设置）
    self.node       你的节点的完整路径，创建或重入之后才有（之前是 None）
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    entries         节点路径 → 它的所有者还没释放的加锁次数：本进程所有锁对象共用
                    这一个字典（内层调用会新建一个锁对象）
"""

import threading  # noqa: F401

from kazoo.exceptions import NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    """顺序节点的序号：ZooKeeper 把它作为十位数字追加在名字后面。"""
    return int(child[-10:])


class ReentrantQueueLock(ZooKeeperLockBase):
    reentrant = True
    entries: dict[str, int] = {}

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-reentry/{name}"
        self.node = None
        self.ahead = None  # 等待期间，排在我们前面的那个节点

    def _try_acquire(self) -> bool:
        """如果最小节点属于当前所有者，就不排队、直接重入；否则排队（只排一次）再看队列。"""
        # TODO 7（A0“可重入”；C29）：如果 self.held（这个锁对象已经持有锁：对它的内层
        # 加锁），在 self.entries[self.node] 上把重入次数加一，返回 True。如果 self.node
        # 是 None，并且队列里最小节点的数据是 self.owner，就把那个节点当作 self.node，
        # 重入次数加一，返回 True。
        # TODO 1（同练习 8）：如果 self.node 是 None，把 self.parent + "/lock-" 创建为
        # 临时顺序节点，数据是 self.owner.encode()，保存它的路径。
        # TODO 2：列出子节点，按 sequence() 排序；我们的排在第一个，就记下它的第一次进入
        # （self.entries[self.node] = 1）并返回 True；否则把排在我们前面的那个保存在
        # self.ahead 里，返回 False。
        raise NotImplementedError("TODO 7, 1 和 2：最小节点属于你的所有者就直接重入；"
                                  "否则排队并找到你的位置")

    def _wait_for_release(self, seconds: float) -> None:
        """等待排在我们前面的节点消失（或 ``seconds`` 秒过去）。"""
        # TODO 3（同练习 8）：只监听排在你前面的那个节点。
        raise NotImplementedError("TODO 3：只监听排在你前面的那个节点")

    def _release(self) -> None:
        # TODO 8（C27）：self.node 的重入次数减一；还有剩余就保留节点，直接返回。
        # TODO 4：减到零时，删除节点并忘掉它的次数（遇到 NoNodeError：会话已经结束：
        # raise LockLost(self.name, "session ended")；原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 8 和 4：次数减一；减到零时删除你的节点")

    def _gave_up(self) -> None:
        # TODO 5（同练习 8）：等待超时了：删除我们的节点（如果有）并忘掉它。
        raise NotImplementedError("TODO 5：放弃等待时，删除你的节点")

    def _still_held(self) -> bool:
        """ZooKeeper 是否仍认为锁归我们。"""
        # TODO 6（同练习 8）：我们的节点还在，并且属于我们的会话。
        raise NotImplementedError("TODO 6：_still_held：节点还在，并且属于我们的会话")
