"""练习 8：公平锁：临时顺序节点，每个等待者只监听排在它前面的那个节点。

文章 A0（第 3 节）、A3（“分布式锁的升级”）和 A4（Curator）：练习 7 的简单锁每次释放
都会唤醒所有等待者，它们一起去抢着重新创建节点：这就是羊群效应（知识点 C19）。
改成这样：

    1. 在锁的父节点下创建一个临时顺序（EPHEMERAL SEQUENTIAL）节点：ZooKeeper
       给它追加一个在这里每创建一个节点就增大的序号，形成一个队列；
    2. 列出子节点：如果你的序号最小，锁就归你；
    3. 否则只监听排在你前面的那个节点，它消失后再看一次（回到 2）：它可能是一个
       放弃等待的等待者，而不是持有者（C38）。
    释放：删除你的节点：这只会唤醒一个等待者，也就是下一个。

等待者按先来后到获得锁（C20）。放弃等待（超时）的等待者必须删除自己的节点，
否则排在它后面的所有等待者会永远等下去。

检查：      ./run exercise check 8 queue_lock.py（练习 7 的检查也会一起运行）

可以使用（由基类 ZooKeeperLockBase 准备好）：
    self.client     一个 kazoo 客户端：.create(path, value, ephemeral=True, sequence=True,
                    makepath=True) 返回它创建的路径；.get_children(path)；
                    .exists(path, watch=callback)；.delete(path)
    self.parent     这把锁的队列："/lockshop/exercise-queue/<name>"（在下面设置）
    self.node       你的节点的完整路径，创建之后才有（之前是 None）
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    _gave_up()      等待超时时基类会调用它
"""

import threading  # noqa: F401

from kazoo.exceptions import NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    """顺序节点的序号：ZooKeeper 把它作为十位数字追加在名字后面。"""
    return int(child[-10:])


class QueueLock(ZooKeeperLockBase):

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-queue/{name}"
        self.node = None
        self.ahead = None  # 等待期间，排在我们前面的那个节点

    def _try_acquire(self) -> bool:
        """加入队列（只加入一次），再看队列：我们的节点序号最小时返回 True。"""
        # TODO 1（A3 第 1 步）：如果 self.node 是 None，把 self.parent + "/lock-" 创建为
        # 临时顺序节点（makepath=True），把它的路径保存在 self.node 里。
        # TODO 2（A3 第 2 步）：列出子节点，按 sequence() 排序；我们的排在第一个就返回
        # True；否则把排在我们前面的那个保存在 self.ahead 里，返回 False。
        raise NotImplementedError("TODO 1 和 2：创建你的顺序节点，再找到你在队列里的"
                                  "位置")

    def _wait_for_release(self, seconds: float) -> None:
        """等待排在我们前面的节点消失（或 ``seconds`` 秒过去）。"""
        # TODO 3（A3 第 3 步）：用 exists(..., watch=) 监听 self.parent + "/" + self.ahead；
        # 它已经不在就立即返回，否则等待监听触发。之后基类会再次调用 _try_acquire：
        # 这就是“再看一次”（C38）。
        raise NotImplementedError("TODO 3：只监听排在你前面的那个节点")

    def _release(self) -> None:
        # TODO 4：删除 self.node 并把它设为 None（遇到 NoNodeError：会话已经结束：
        # raise LockLost(self.name, "session ended")；原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 4：删除你的节点")

    def _gave_up(self) -> None:
        # TODO 5：等待超时了：删除我们的节点（如果有）并忘掉它，否则它会挡住排在
        # 后面的所有等待者。
        raise NotImplementedError("TODO 5：放弃等待时，删除你的节点")

    def _still_held(self) -> bool:
        """ZooKeeper 是否仍认为锁归我们（店铺在写入之前通过 ensure_held() 询问）。"""
        # TODO 6（A4，Curator 的警告；知识点 C22）：我们的节点必须仍然存在，并且属于我们
        # 的会话：self.client.exists(self.node) 返回一个 stat（节点不在时为 None），它的
        # ephemeralOwner 必须等于 self.client.client_id[0]。过期的会话已经失去了它的
        # 节点，新的会话什么也不持有。
        raise NotImplementedError("TODO 6：_still_held：节点还在，并且属于我们的会话")
