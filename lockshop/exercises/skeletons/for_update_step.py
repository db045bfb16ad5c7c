"""Exercise 18: SELECT ... FOR UPDATE through a unique index, held until the commit.

Article A1 ("基于数据库排他锁做分布式锁"): add FOR UPDATE to the read, and InnoDB
locks the row it reads until the transaction ends: the commit is the release.
Two things make or break it:

* the lock lasts as long as its transaction, no longer: a step that locks and
  reads in one transaction and writes in another has let go before its write,
  and the next buyer reads the old stock (lesson C40);
* InnoDB locks the index records its lookup passes, so the row must be found
  through a unique index (the primary key): a lookup by a column without one
  scans the table and locks every row, and other products' orders wait
  (lesson C08).

Here you write the shop's order step itself, in SQL, on MariaDB: read the stock,
check it, wait the business delay, write the new stock, insert the order.

Check it:   ./run exercise check 18 for_update_step.py
(the grader makes a MariaDB database of its own, and three shop instances sell
with your step)

What you may use:
    locking_transaction(database, context)   one transaction, as a "with" block:
        with locking_transaction(database, context) as db: ...
        it commits at the end of the block (rolls back on an error), and its waits
        for a row lock end after the shop's lock timeout
    db.execute(text("SELECT ... WHERE id = :product"), {"product": ...}).scalar()
    the table:  products (id INT PRIMARY KEY, sku VARCHAR UNIQUE, name VARCHAR,
                          stock INT, ...)
    request.product_id, request.quantity
    free_seats(db, product_id)      a ticket's free seats (read in your transaction)
    check_fits(request, kind, stock, free)   refuses what does not fit; a seat to take
    business_delay(context, sleep)  the slow part between the check and the write:
                                    the grader stops buyers here, keep it there
    insert_order(db, request, seat, context)   inserts the order; returns it
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
        """One order: read, check, wait, write, insert. Return insert_order's order."""
        kind = kind or check_request(database, request)
        # TODO 3 (A1; C40): in ONE transaction (locking_transaction), in this order:
        #   stock = self.lock_and_read(db, request.product_id)
        #   free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
        #   seat = check_fits(request, kind, stock, free)
        #   business_delay(context, sleep)
        #   self.write_stock(db, request.product_id, stock - request.quantity)
        #   return insert_order(db, request, seat, context)
        # The commit, at the end of the block, is what releases the row.
        raise NotImplementedError("TODO 3: lock_and_read, check, business_delay, write_stock "
                                  "and insert_order, all in one locking_transaction")

    def lock_and_read(self, db, product_id):
        """The product's stock (None if there is no such product), its row locked until
        the transaction ends."""
        # TODO 1 (A1; C08): SELECT the stock FOR UPDATE, finding the row through a unique
        # index: the primary key, id.
        raise NotImplementedError("TODO 1: SELECT stock FROM products WHERE id = :product "
                                  "FOR UPDATE")

    def write_stock(self, db, product_id, stock):
        """Write the product's new stock."""
        # TODO 2: UPDATE the product's stock (the row you hold).
        raise NotImplementedError("TODO 2: UPDATE products SET stock = :stock WHERE id = "
                                  ":product")
