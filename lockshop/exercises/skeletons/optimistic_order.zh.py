"""练习 19：乐观锁。一个版本号字段，加上一次会检查它的写入。

文章 A1 的“基于表字段版本号做分布式锁”一节：完全不加锁。读库存的同时读出商品的
版本号；检查；做耗时的业务；然后只在版本号仍是读到的那个时才写入，并在同一条
UPDATE 里把版本号加一。如果其间有别的买家写过，你的 UPDATE 一行也改不了：这就是
冲突。冲突要变成重试（重新读、重新检查），绝不能拿过时的数字去卖（知识点 C07）。
A1 也说了代价：要保护的每张表都得加一个版本号字段，每单要多执行几条语句，竞争激烈
时就是更多的重试。

检查：      ./run exercise check 19 optimistic_order.py
评分程序会在三个同时售卖的店铺实例里运行你的下单步骤，也会单独运行它：让两个买家
在任何一方写入之前读到同一个版本号。找到这个时机不需要你的代码做任何配合。

表（这里是 SQLite；同样的 SQL 也能在 PostgreSQL 上运行）：
    products(id, stock, version, ...)   每个商品一行
在连接 ``db`` 上执行 SQL：``db.execute(text("... :name ..."), {"name": value})``；
``.one()`` 取出那一行，``.rowcount`` 是 UPDATE 改动的行数。
"""

import random
import time

from sqlalchemy import Connection, Engine, text

from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_fits,
    check_request,
    free_seats,
    insert_order,
)
from shop.orders.transactions import TooMuchContention
from shop.store.models import PlacedOrder, ProductKind

MAX_ATTEMPTS = 20


class OptimisticStep(OrderStep):
    """带版本号字段的下单流程：冲突就重试，绝不凭旧数据卖出。"""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """下一单，不加锁：读、检查、等待，只有在没人写过时才写入。"""
        kind = kind or check_request(database, request)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            with database.begin() as db:
                version, stock = self.read_version_and_stock(db, request.product_id)
                free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
            seat = check_fits(request, kind, stock, free)
            business_delay(context, sleep)  # 竞态窗口：其间别的买家可能写入
            with database.begin() as db:
                new_stock = stock - request.quantity
                if self.write_if_unchanged(db, request.product_id, version, new_stock):
                    return insert_order(db, request, seat, context, attempts=attempt)
            # TODO 3（A1，版本号字段）：什么也没写入，因为在我们读之后别的买家写过了。
            # 不能按读到的数字去卖：稍等片刻（随机几毫秒，每次尝试更长一些：sleep(...)），
            # 然后回到循环开头再来一遍。
            raise NotImplementedError("TODO 3：冲突就重试：随机等待片刻，"
                                      "然后重新读（继续循环）")
        raise TooMuchContention(f"product {request.product_id}: {MAX_ATTEMPTS} attempts all "
                                "conflicted; try again")

    def read_version_and_stock(self, db: Connection, product_id: int) -> tuple[int, int]:
        """商品的版本号和库存，一起读出。"""
        # TODO 1（A1）：用一条语句读出商品这一行的两个字段：分开读的话，库存可能比
        # 之后用来比较的版本号更新。
        raise NotImplementedError("TODO 1：SELECT version, stock FROM products WHERE id = "
                                  ":product，一条语句；返回 (version, stock)")

    def write_if_unchanged(self, db: Connection, product_id: int, read_version: int,
                           new_stock: int) -> bool:
        """只在版本号仍是 ``read_version`` 时写入 ``new_stock``：写入了就返回 True。"""
        # TODO 2（A1）：用一条 UPDATE 写入新库存和下一个版本号，条件是版本号仍是你读到
        # 的那个；然后返回它是否改动了这一行。
        raise NotImplementedError("TODO 2：UPDATE products SET stock = :new_stock, version = "
                                  ":read_version + 1 WHERE id = :product AND version = "
                                  ":read_version；改动了一行就返回 True")
