"""练习 21：重试的订单。一个 Idempotency-Key，一张订单。

超出文章的内容（知识点 C44）：没收到应答的买家（超时、连接断开）无法知道订单有没有
下成：店铺可能已经提交了。重试是对的，因为也可能失败了；但如果不做别的，就会买两次。
锁帮不上忙：两次尝试甚至可能在两个实例上运行。办法是一个键：买家每张订单生成一次，
每次尝试都带上它（``Idempotency-Key`` 请求头）：

1. 如果这个键已经下过单，这次尝试就拿回那张订单，不再卖出任何东西；
2. 真正卖出的那次尝试，把键写在订单旁边，和订单在同一个事务里：键是这张表的主键，
   所以带同一个键的第二张订单无论在哪里运行都提交不了；
3. 输掉这场竞争的尝试（它插入键时失败），就把先提交的那张订单作为应答返回。

检查：      ./run exercise check 21 idempotent_order.py
评分程序会丢掉一张已提交订单的应答，然后在另一个店铺实例上用同一个键重试：一次在
第一次尝试还在处理时，一次在它完成之后；店铺的审计必须是每个键一张订单。

表（这里是 SQLite；同样的代码也能在 PostgreSQL 上运行）：
    order_keys(key PRIMARY KEY, order_id, request, created_at)
用 SQLAlchemy 的 ``insert(OrderKey)`` 写入，用 ``select(OrderKey...)`` 读取
（它们会按数据库自己的格式写时间）。
"""

import time
from dataclasses import replace

from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.exc import IntegrityError

from shop.errors import SoldOut
from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_request,
    insert_order,
)
from shop.orders.transactions import TAKE_STOCK, place_atomic
from shop.store.models import Order, OrderKey, PlacedOrder, ProductKind, utcnow


class IdempotentStep(OrderStep):
    """重试也不会下两次的下单流程：一个键，一张订单。"""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """每个键一张订单：重试一张已经下成的订单，会拿回那张订单。"""
        kind = kind or check_request(database, request)
        if request.key is None or kind is ProductKind.TICKET:
            # 没有键，就没什么要记；票：用店铺自己的步骤（这个练习卖的是商品）。
            return place_atomic(database, request, context, kind, sleep)
        with database.begin() as db:
            first = self.order_of_key(db, request.key)
        if first is not None:
            return first  # 1. 这是重试：不再卖出任何东西
        business_delay(context, sleep)  # 其间带同一个键的另一次尝试可能提交
        try:
            with database.begin() as db:
                # 用练习 20 的带条件 UPDATE 扣减库存。
                if db.execute(TAKE_STOCK, {"product": request.product_id,
                                           "quantity": request.quantity}).rowcount != 1:
                    raise SoldOut(f"product {request.product_id} is sold out")
                order = insert_order(db, replace(request, key=None), None, context)
                self.remember_key(db, request, order.id)  # 2. 在订单自己的事务里
                return order
        except IntegrityError:
            # TODO 3（C44）：插入我们的键失败了，说明带这个键的另一次尝试先提交了（这个
            # 事务已经回滚：什么也没卖出）。它的订单就是我们的应答：把它读出来
            # （order_of_key，在它自己的事务里）。
            raise NotImplementedError("TODO 3：这个键被先提交的那次尝试占了："
                                      "用它的订单作答")

    def order_of_key(self, db: Connection, key: str) -> PlacedOrder | None:
        """``key`` 下的订单；没有就返回 None。"""
        order_id = self.order_id_of_key(db, key)
        return None if order_id is None else self.load_order(db, order_id)

    def order_id_of_key(self, db: Connection, key: str) -> int | None:
        """``key`` 下的订单的编号；没有就返回 None。"""
        # TODO 1（C44）：找到这个键的那一行，读出它的 order_id；没有这一行就返回 None。
        raise NotImplementedError("TODO 1：SELECT order_id FROM order_keys WHERE key = :key "
                                  "（select(OrderKey.order_id).where(...)）；没有这一行就返回 None")

    def remember_key(self, db: Connection, request: OrderRequest, order_id: int) -> None:
        """把 ``request.key`` 写在它下的订单旁边（在调用者的事务里）。"""
        # TODO 2（C44）：插入这个键的一行：键、订单号、请求的内容（request.asked）和
        # 时间（utcnow()）。剩下的交给它的主键。
        raise NotImplementedError("TODO 2：INSERT INTO order_keys (key, order_id, request, "
                                  "created_at)：insert(OrderKey).values(...)")

    def load_order(self, db: Connection, order_id: int) -> PlacedOrder:
        """订单 ``order_id``，按店铺应答的样子。"""
        row = db.execute(select(Order.__table__).where(Order.id == order_id)).one()
        return PlacedOrder(**row._asdict())
