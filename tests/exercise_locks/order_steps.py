"""Order steps exercise 18 must catch: each is the student's step but for one thing, and
the grader must name that thing's lesson."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import text

from locks.custom import import_target
from shop.orders.order_path import business_delay, check_fits, check_request, insert_order
from shop.orders.transactions import locking_transaction

#: The student's solution, next to this file (loaded as the grader loads a file: shop
#: instances load this one by its path, with no package around it).
ForUpdateStep = import_target(str(Path(__file__).with_name("for_update_step.py"))).ForUpdateStep


class CommitsBeforeWrite(ForUpdateStep):
    """Locks and reads in one transaction, writes in another: the commit of the first
    released the row before the write (C40). Items only, as the grader's buyers order."""

    def place(self, database, request, context, kind=None, sleep=time.sleep):
        kind = kind or check_request(database, request)
        with locking_transaction(database, context) as db:
            stock = self.lock_and_read(db, request.product_id)
        check_fits(request, kind, stock, [])
        business_delay(context, sleep)
        with locking_transaction(database, context) as db:
            self.write_stock(db, request.product_id, stock - request.quantity)
            return insert_order(db, request, None, context)


class PlainRead(ForUpdateStep):
    """One transaction, but a read without FOR UPDATE: InnoDB's consistent read locks
    nothing, and two buyers read the same stock (C40)."""

    def lock_and_read(self, db, product_id):
        return db.execute(text("SELECT stock FROM products WHERE id = :product"),
                          {"product": product_id}).scalar()


class LooksUpByName(ForUpdateStep):
    """FOR UPDATE on a lookup by the product's name, a column with no index: InnoDB scans
    the table and locks every row it reads, so other products' orders wait (C08)."""

    def lock_and_read(self, db, product_id):
        name = db.execute(text("SELECT name FROM products WHERE id = :product"),
                          {"product": product_id}).scalar()
        return db.execute(text("SELECT stock FROM products WHERE name = :name FOR UPDATE"),
                          {"name": name}).scalar()
