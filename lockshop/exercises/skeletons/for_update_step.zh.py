"""练习 18：通过唯一索引 SELECT ... FOR UPDATE，一直持有到提交。

文章 A1（“基于数据库排他锁做分布式锁”）：在查询后面加上 FOR UPDATE，InnoDB 就会锁住
读到的那一行，直到事务结束：提交就是释放锁。成败取决于两点：

* 锁只持续到它的事务结束，不会更久：在一个事务里加锁并读取、在另一个事务里写入，
  写入之前锁就已经放开了，下一个买家读到的是旧库存（知识点 C40）；
* InnoDB 锁的是查询经过的索引记录，所以这一行必须通过唯一索引（主键）找到：按没有
  唯一索引的列查找会扫描整张表、锁住每一行，其他商品的订单都得等待（知识点 C08）。

这里你用 SQL 写店铺的下单步骤本身，运行在 MariaDB 上：读库存，检查，等待业务延迟，
写入新库存，插入订单。

检查：      ./run exercise check 18 for_update_step.py
（评分程序会在 MariaDB 上建一个自己的数据库，三个店铺实例用你的步骤下单）

可以使用：
    locking_transaction(database, context)   一个事务，写成 with 块：
        with locking_transaction(database, context) as db: ...
        块结束时提交（出错时回滚），等待行锁的时间不超过店铺的锁超时
    db.execute(text("SELECT ... WHERE id = :product"), {"product": ...}).scalar()
    表结构：  products (id INT PRIMARY KEY, sku VARCHAR UNIQUE, name VARCHAR,
                          stock INT, ...)
    request.product_id, request.quantity
    free_seats(db, product_id)      票的空余座位（在你的事务里读取）
    check_fits(request, kind, stock, free)   拒绝放不下的订单；返回要占的座位
    business_delay(context, sleep)  检查和写入之间较慢的那一步：
                                    评分程序会让买家停在这里，保留它的位置
    insert_order(db, request, seat, context)   插入订单并返回它
"""

import time

from sqlalchemy import text

from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    business_delay,
    check_fits,
    check_request,
    free_seats,
    insert_order,
)
from shop.orders.transactions import locking_transaction
from shop.store.models import ProductKind


class ForUpdateStep(OrderStep):

    def place(self, database, request, context, kind=None, sleep=time.sleep):
        """一笔订单：读取，检查，等待，写入，插入。返回 insert_order 给出的订单。"""
        kind = kind or check_request(database, request)
        # TODO 3（A1；C40）：在同一个事务里（locking_transaction），按这个顺序：
        #   stock = self.lock_and_read(db, request.product_id)
        #   free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
        #   seat = check_fits(request, kind, stock, free)
        #   business_delay(context, sleep)
        #   self.write_stock(db, request.product_id, stock - request.quantity)
        #   return insert_order(db, request, seat, context)
        # 块结束时的提交，才是释放这一行的时刻。
        raise NotImplementedError("TODO 3：lock_and_read、检查、business_delay、write_stock "
                                  "和 insert_order，全部在同一个 locking_transaction 里")

    def lock_and_read(self, db, product_id):
        """商品的库存（没有这个商品时为 None），它的那一行一直锁到事务结束。"""
        # TODO 1（A1；C08）：用 FOR UPDATE 读出库存，通过唯一索引找到这一行：
        # 主键 id。
        raise NotImplementedError("TODO 1：SELECT stock FROM products WHERE id = :product "
                                  "FOR UPDATE")

    def write_stock(self, db, product_id, stock):
        """写入商品的新库存。"""
        # TODO 2：UPDATE 这个商品的库存（你持有的那一行）。
        raise NotImplementedError("TODO 2：UPDATE products SET stock = :stock WHERE id = "
                                  ":product")
