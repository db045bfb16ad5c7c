"""Exercise 13 as students get it wrong: each write lock is right but for one thing, and
the grader must name that thing's lesson. Name the class: rw_mistakes.py:ReadersFirst."""

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

    def blockers(self, children: list[str], mine: str) -> list[str]:
        return children[:children.index(mine)]


class ReadsWhileNoWriterHolds(ReadLock):
    """A reader waits only for a writer that *holds* (the lowest node): one queued ahead
    of it is overtaken, and readers that keep coming starve it (C39)."""

    def blockers(self, children: list[str], mine: str) -> list[str]:
        return children[:1] if children[0].startswith("write-") and children[0] != mine else []


class ReadersFirst(WriteLock):
    read_lock_class = ReadsWhileNoWriterHolds


class ReaderHandsOver(ReadLock):
    """A reader hands the lock over on release, as the exclusive lock does: the writer
    behind it walks in while another reader still reads (C21)."""

    hands_over = True


class HandsOverToWriters(WriteLock):
    read_lock_class = ReaderHandsOver


class WriterWaitsForWriters(WriteLock):
    """A writer waits only for the writers ahead of it: it walks in while readers read
    (C21)."""

    read_lock_class = ReadLock

    def blockers(self, children: list[str], mine: str) -> list[str]:
        return [child for child in children[:children.index(mine)]
                if child.startswith("write-")]
