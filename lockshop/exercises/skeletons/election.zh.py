"""练习 14：ZooKeeper 上的领导者选举，让集群任务只跑一次。

文章 A1（Quartz 集群，知识点 C24）：每个店铺实例都跑同一个调度器，所以一个任务的
每个触发时刻在每个实例上都会触发，任务跑了三次。改成选出一个领导者，只让领导者
跑任务。选举就是练习 8 的公平队列，在会话存续期间一直持有（A4，Curator 的
LeaderLatch）：

    参选：在组的父节点下创建一个临时顺序（EPHEMERAL SEQUENTIAL）节点；
    查看：列出子节点：你的序号最小，你就是领导者；
    等待：否则监听紧挨在你前面的节点；它消失后再看一次。
    任职：保持领导者身份，直到你的会话结束（你的节点随之消失：下一个成为领导者），
          或者你被停下（删除你的节点：下一个立即成为领导者）。

领导者写入任务结果之前，店铺会调用 ``ensure_leader()``：暂停时间超过会话超时的
领导者已经被取代，它必须去问 ZooKeeper，不能只信本地内存里的状态（A4，
Curator 的警告；知识点 C22）。

检查：      ./run exercise check 14 election.py
评分程序让你的三个候选者参选，让领导者的会话过期，然后启动三个店铺实例，
它们的任务守卫 'leader' 用的就是你的选举。

可以使用（基类 Candidate，在 locks/zk_election.py）：
    self.client     一个 kazoo 客户端：.create(path, value, ephemeral=True, sequence=True,
                    makepath=True) 返回它创建的路径；.get_children(path)；
                    .exists(path, watch=callback) 返回一个 stat（节点不在时为 None）：
                    stat.ephemeralOwner 是创建这个节点的会话；.delete(path)
    self.parent     这个组的候选者："/lockshop/exercise-election/<group>"
    self.name       选举的名字，用于 LockLost(self.name, "not the leader")
    self._stop      一个 threading.Event，由 stop() 设置：self._stop.wait(s) 最多睡 s 秒
    our_session()   我们当前所在的会话（断开连接期间为 None）；过期之后是一个新的会话：
                    旧会话的节点都不属于它
"""

import threading  # noqa: F401

from kazoo.exceptions import KazooException, NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_election import Candidate


def sequence(child: str) -> int:
    """顺序节点的序号：ZooKeeper 把它作为十位数字追加在名字后面。"""
    return int(child[-10:])


class Election(Candidate):

    def __init__(self, factory, group: str) -> None:
        super().__init__(factory, group)
        self.client = factory.client
        self.parent = f"/lockshop/exercise-election/{group}"
        self.node = None  # 参选期间，我们的候选节点
        self.session = None  # 创建它的会话
        self.leading = False

    def our_session(self):
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    def _campaign(self) -> None:
        """一轮一轮地参选，直到被停下。ZooKeeper 的错误（连接断开、会话过期）只说明：
        我们不是领导者；稍后再参选。"""
        while not self._stop.is_set():
            try:
                self._stand()
            except KazooException:
                self.leading = False
                self._stop.wait(0.2)
        self._step_down()

    def _stand(self) -> None:
        """一轮：加入（每个会话一次），查看，然后领导或等待。"""
        # TODO 1（参选）：如果 self.node 是 None，或者 self.session 不是 our_session()
        # （它过期了，我们的节点随之消失），就把 self.parent + "/candidate-" 创建为临时顺序
        # 节点；把路径保存在 self.node，把会话保存在 self.session。
        # TODO 2（查看、任职）：列出子节点，按 sequence() 排序。我们的序号最小：
        # self.leading = True，只要会话还是 self.session、也没有被停下，就一直保持领导者身份
        # （循环调用 self._stop.wait(0.1)）；然后 self.leading = False，返回。
        # TODO 3（等待）：否则用 exists(..., watch=) 监听紧挨在我们前面的节点，等它消失，
        # 最多等一秒（监听唤不醒 self._stop.wait：用一个 threading.Event）；然后返回：
        # 下一轮会再看一次。
        raise NotImplementedError("TODO 1, 2 和 3：用顺序节点参选，序号最小时成为领导者，"
                                  "否则监听紧挨在前面的节点")

    def is_leader(self) -> bool:
        """只看本地状态（不访问服务器），判断我们是否是领导者（调度器每个触发时刻都会问）。"""
        # TODO 4：我们正担任领导者，并且当前会话仍是我们节点所属的会话。
        raise NotImplementedError("TODO 4：is_leader：正担任领导者，并且还在节点所属的会话上")

    def ensure_leader(self) -> None:
        """除非 ZooKeeper 确认我们仍是领导者，否则抛出 LockLost。"""
        # TODO 5（A4；C22）：问服务器：我们的节点还在，它的 stat.ephemeralOwner 是
        # our_session()，并且它是子节点中序号最小的。否则，以及遇到任何 KazooException
        # （过期的会话会返回一个）时，raise LockLost(self.name, "not the leader")
        # （原因用英文写：界面会按读者的语言显示）。
        raise NotImplementedError("TODO 5：ensure_leader：要问 ZooKeeper，不能只信本地内存里的状态")

    def _step_down(self) -> None:
        """被停下了：退出选举，让下一个候选者立即成为领导者。"""
        # TODO 6：self.leading = False；如果我们的节点是当前会话创建的，就删除它（遇到
        # NoNodeError 或 KazooException：它已经不在了）；然后忘掉它。
        raise NotImplementedError("TODO 6：被停下时，删除你的节点")
