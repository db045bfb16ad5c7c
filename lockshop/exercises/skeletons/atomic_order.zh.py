"""练习 20：也许不需要锁。一条带条件的 UPDATE。

超出文章的内容（知识点 C25）：本工作坊里的每一把锁，保护的都是“读、判断、写”，这三步
不能交错执行。把检查放进写入的 WHERE 子句，就只剩一步，由数据库原子地执行：
``UPDATE ... SET stock = stock - :q WHERE ... AND stock >= :q`` 要么扣减库存，要么
一行也不改。之前什么也没读，就没有过时的数字可以卖；耗时的业务执行期间，也什么都
不持有。座位也这样占：只在没人占着时（WHERE）才占。

检查：      ./run exercise check 20 atomic_order.py
评分程序会在三个同时售卖的店铺实例里运行你的下单步骤，也会单独运行它：几个买家抢
最后一件、抢同一个座位，他们都过了业务延迟之后才有人写入。

表（这里是 SQLite；同样的 SQL 也能在 PostgreSQL 上运行）：
    products(id, stock, ...)                 每个商品一行
    seats(id, product_id, label, order_id)   票的座位；空闲时 order_id 为 NULL
在连接 ``db`` 上执行 SQL：``db.execute(text("... :name ..."), {"name": value})``；
``.rowcount`` 是 UPDATE 改动的行数。
"""

import time

from sqlalchemy import Connection, Engine, text, update

from shop.errors import SeatTaken, SoldOut
from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_request,
    insert_order,
)
from shop.store.models import Order, PlacedOrder, ProductKind


class AtomicStep(OrderStep):
    """下单流程就是一条带条件的 UPDATE：写入本身就是检查。"""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """下一单，不加锁也不先读：库存由写入本身来检查。"""
        kind = kind or check_request(database, request)
        business_delay(context, sleep)  # 耗时的业务照样要花时间；但什么都不持有
        with database.begin() as db:
            if not self.take_stock(db, request.product_id, request.quantity):
                # 抛出异常会回滚事务：什么也没扣。
                raise SoldOut(f"product {request.product_id} is sold out")
            order = insert_order(db, request, None, context)
            if kind is ProductKind.TICKET:
                order.seat = self.claim_a_seat(db, request, order.id)
            return order

    def take_stock(self, db: Connection, product_id: int, quantity: int) -> bool:
        """库存够 ``quantity`` 件就扣减：扣了就返回 True。"""
        # TODO 1（C25）：用一条 UPDATE 扣减库存，条件（WHERE）是剩下的够；检查和写入
        # 在同一条语句里；然后返回它是否改动了这一行。
        raise NotImplementedError("TODO 1：UPDATE products SET stock = stock - :quantity WHERE "
                                  "id = :product AND stock >= :quantity；改动了一行就返回 True")

    def claim_a_seat(self, db: Connection, request: OrderRequest, order_id: int) -> str:
        """为 ``order_id`` 占下指定的座位（没有指定就占第一个空座）；返回座位号。"""
        candidates = [request.seat] if request.seat else list(db.scalars(
            text("SELECT label FROM seats WHERE product_id = :product AND order_id IS NULL "
                 "ORDER BY id"), {"product": request.product_id}))
        for label in candidates:
            if self.claim_seat(db, request.product_id, label, order_id):
                db.execute(update(Order).where(Order.id == order_id).values(seat=label))
                return label
        # 抛出异常会回滚扣减的库存，连同订单一起。
        if request.seat:
            raise SeatTaken(f"seat {request.seat} is taken", seat=request.seat)
        raise SoldOut(f"product {request.product_id} has no free seat", remaining=0)

    def claim_seat(self, db: Connection, product_id: int, label: str, order_id: int) -> bool:
        """座位 ``label`` 没人占时把它给 ``order_id``：原来空着就返回 True。"""
        # TODO 2（C25）：座位也是同样的办法：用一条 UPDATE 写入订单号，条件（WHERE）是
        # 这个座位还没有订单；然后返回它是否改动了这一行。
        raise NotImplementedError("TODO 2：UPDATE seats SET order_id = :order WHERE product_id "
                                  "= :product AND label = :seat AND order_id IS NULL；改动了"
                                  "一行就返回 True")
