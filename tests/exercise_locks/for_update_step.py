"""Exercise 18 as a student solves it: the skeleton with its TODOs filled in."""

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
        kind = kind or check_request(database, request)
        with locking_transaction(database, context) as db:
            stock = self.lock_and_read(db, request.product_id)
            free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
            seat = check_fits(request, kind, stock, free)
            business_delay(context, sleep)
            self.write_stock(db, request.product_id, stock - request.quantity)
            return insert_order(db, request, seat, context)

    def lock_and_read(self, db, product_id):
        return db.execute(text("SELECT stock FROM products WHERE id = :product FOR UPDATE"),
                          {"product": product_id}).scalar()

    def write_stock(self, db, product_id, stock):
        db.execute(text("UPDATE products SET stock = :stock WHERE id = :product"),
                   {"stock": stock, "product": product_id})
