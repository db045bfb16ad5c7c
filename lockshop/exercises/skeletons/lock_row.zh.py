"""练习 17：锁表里的一行锁，带过期时间。

文章 A1（“基于表主键唯一做分布式锁”）：插入一行，主键就是锁的名字；同一个名字的插入，
数据库只让一次成功，成功的那一方持有锁；删除这一行就是释放锁。只写到这一步的话，持有者
在删除之前死掉（崩溃、被杀、连接断开），它的那一行就留在表里，之后这个名字的每次插入
都会失败：锁不属于任何人，却永远拿不到（知识点 C06）。所以这一行要带上租约结束的时间，
加锁时先接管租约已经过期的那一行。租约过期的持有者还可能回来释放锁：它只能删除自己的
那一行，绝不能删掉接管者的那一行（知识点 C11）。

检查：      ./run exercise check 17 lock_row.py
（评分程序会建一个自己的数据库：一个 SQLite 文件，三个店铺实例共用它）

表结构（由基类创建）：
    lockshop_locks (name VARCHAR(200) PRIMARY KEY, owner VARCHAR(100) NOT NULL,
                    expires_at_ms BIGINT NOT NULL)

可以使用（由基类 TableLock 准备好）：
    self._engine       评分程序的数据库，每个 with 块是一个事务：
                           with self._engine.begin() as db:
                               db.execute(text("... :name ..."), {"name": self.name})
                       块结束时提交，出错时回滚
    self.name          这把锁的名字：这一行的主键
    self._token_owner  其他任何一次加锁都不会用到的值：你这一行的 owner
    self._lease_ms     租约时长，单位毫秒
    now_ms()           当前时间，单位毫秒
    IntegrityError     插入一个已经存在的名字时抛出的异常
    LockLost(self.name, why)   这一行已经不是你的时，释放锁要抛出的异常
店铺每次写入之前，基类都会读回你的这一行（它的 _still_held：这个名字的一行，owner 是你，
而且还没有过期）。
评分程序会在你的持有者处于临界区时杀掉它：这不需要你的代码做任何配合。
"""

from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from locks import LockLost
from locks.table_lock import TableLock, now_ms


class LockRow(TableLock):

    def _try_acquire(self) -> bool:
        """尝试一次：锁归我们了就返回 True。这里不要等待，也不要循环。"""
        # TODO 1（A1；C06）：在同一个事务里：
        #   - 删除这个名字租约已经结束的那一行（expires_at_ms <= now），
        #   - 插入你的一行：name，owner = self._token_owner，
        #     expires_at_ms = now + self._lease_ms。
        # 插入一个已经存在的名字会抛出 IntegrityError：这时返回 False。
        raise NotImplementedError("TODO 1：先 DELETE self.name 已过期的那一行，再 INSERT "
                                  "(name, owner, expires_at_ms)；IntegrityError → False")

    def _release(self) -> None:
        """释放锁。"""
        # TODO 2（C11）：只在 owner 是你时删除这个名字的那一行；如果什么也没删掉，
        # 说明你的租约已经过期、别人接管了锁：抛出 LockLost。
        raise NotImplementedError("TODO 2：DELETE ... WHERE name = :name AND owner = :owner；"
                                  "什么也没删掉 → raise LockLost(self.name, ...)")
