"""练习 7：基于一个临时节点的 ZooKeeper 锁。

文章 A0（第 3 节）、A1 和 A3（“简单的分布式锁”）：每个客户端都尝试创建同一个节点；
ZooKeeper 只让其中一个创建成功。这个节点是*临时节点*：只在创建它的客户端的会话
存续期间存在，所以持有者崩溃或断开连接时节点随之消失，锁自动释放（知识点 C18）。
发现节点已被占用的客户端监听这个节点，等 ZooKeeper 通知它被删除后再试一次。

检查：      ./run exercise check 7 ephemeral_lock.py

可以使用（由基类 ZooKeeperLockBase 准备好）：
    self.client     连到评分程序那台 ZooKeeper 的 kazoo 客户端（KazooClient），已连接：
                    .create(path, value, ephemeral=True, makepath=True)、.delete(path)、
                    .exists(path, watch=callback)（节点变化时 callback(event) 运行一次）
    self.path       这把锁的节点："/lockshop/exercise/<name>"（在下面设置）
    self.owner      当前请求者：本线程（或 asyncio 任务），不会被复用
    kazoo.exceptions.NodeExistsError、NoNodeError
等待、超时、拒绝从未加锁者的释放，都由基类负责。两次尝试之间，基类调用
_wait_for_release(seconds)：覆盖它，用监听等待节点被删除，而不是轮询。
"""

import threading  # noqa: F401 - TODO 2 要用

from kazoo.exceptions import NodeExistsError, NoNodeError  # noqa: F401

from locks.zk_session import ZooKeeperLockBase


class EphemeralLock(ZooKeeperLockBase):

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.path = f"/lockshop/exercise/{name}"

    def _try_acquire(self) -> bool:
        """尝试一次：锁归我们了就返回 True。"""
        # TODO 1（A3，“创建临时节点”）：把 self.path 创建为临时（EPHEMERAL）节点
        # （makepath=True，数据是所有者）；成功返回 True，遇到 NodeExistsError 返回 False。
        raise NotImplementedError("TODO 1：把 self.path 创建为临时节点")

    def _wait_for_release(self, seconds: float) -> None:
        """等待持有者的节点可能已被删除，最多等 ``seconds`` 秒。"""
        # TODO 2（A1、A3 “监听”）：用 self.client.exists(..., watch=...) 监听 self.path：
        # 节点还在，就等待（用一个 threading.Event），直到监听触发或 ``seconds`` 秒过去；
        # 节点已经没了，就立即返回。
        raise NotImplementedError("TODO 2：用监听等待节点被删除")

    def _release(self) -> None:
        """释放锁。"""
        # TODO 3：删除 self.path。如果它已经不在了（NoNodeError），说明我们的会话已经
        # 结束，锁可能已被别人持有：raise LockLost(self.name, "session ended")
        # （原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 3：删除 self.path")

    def _still_held(self) -> bool:
        """ZooKeeper 是否仍认为锁归我们（店铺在写入之前通过 ensure_held() 询问）。"""
        # TODO 4（A4，Curator 的警告；知识点 C22）：我们的节点必须仍然存在，并且属于我们
        # 的会话：self.client.exists(self.path) 返回一个 stat（节点不在时为 None），它的
        # ephemeralOwner 必须等于 self.client.client_id[0]。过期的会话已经失去了它的
        # 节点，新的会话什么也不持有。
        raise NotImplementedError("TODO 4：_still_held：节点还在，并且属于我们的会话")
