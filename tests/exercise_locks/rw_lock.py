"""Exercise 13 as a student solves it: the skeleton with its TODOs filled in."""

from locks.zk_fair import ZkFairLock

ROOT = "/lockshop/exercise-rw"


class ReadLock(ZkFairLock):
    root = ROOT
    kind = "read"
    hands_over = False

    def blockers(self, children: list[str], mine: str) -> list[str]:
        return [child for child in children[:children.index(mine)]
                if child.startswith("write-")]


class WriteLock(ZkFairLock):
    root = ROOT
    kind = "write"
    read_lock_class = ReadLock

    def blockers(self, children: list[str], mine: str) -> list[str]:
        return children[:children.index(mine)]
