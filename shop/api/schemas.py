"""The API's bodies as pydantic models: what validates a request is what the
OpenAPI document shows (``shop.api.spec`` generates it from these).

Requests are strict: no field the model does not name, no ``"1"`` for a
number, no ``true`` for a count. Answers allow more fields than they name, so
that adding a field to an answer is never a breaking change.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from shop.i18n import _
from shop.orders.order_path import MAX_QUANTITY
from shop.store.products import MAX_PRODUCTS, MAX_SEATS, MAX_STOCK, SKU_PATTERN
from shop.store.settings import MAX_BUSINESS_DELAY_MS, MAX_JOB_MS

#: Ids are 32-bit on every database we support; a larger one cannot exist.
MAX_ID = 2**31 - 1
SEAT_LABEL = r"^[A-Za-z0-9]{1,16}$"


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- requests -----------------------------------------------------------------------

class NewOrder(Request):
    """An order: ``quantity`` of an item, or one seat of a ticket."""

    product_id: int = Field(ge=1, le=MAX_ID)
    quantity: int = Field(1, ge=1, le=MAX_QUANTITY, description="must be 1 for a ticket")
    seat: str | None = Field(None, pattern=SEAT_LABEL,
                             description="tickets only; omit for the first free seat")


class OrderHeaders(BaseModel):
    """Headers of a new order (only documented: the view reads and checks its own)."""

    idempotency_key: str | None = Field(
        None, alias="Idempotency-Key", min_length=1, max_length=255,
        description="one key per order, the same on every retry of it: a retry on any "
                    "instance gets the order the key made (``Idempotent-Replayed: true``) "
                    "and never makes a second; kept 24 hours")


class NewProduct(Request):
    """One product of a reset: an item with ``stock``, or a ticket with ``seats``."""

    sku: str = Field(pattern=SKU_PATTERN.pattern)
    name: str | None = Field(None, min_length=1, max_length=200, description="default: the sku")
    kind: Literal["item", "ticket"] = "item"
    stock: int | None = Field(None, ge=0, le=MAX_STOCK, description="items only")
    seats: int | list[str] | None = Field(
        None, description="tickets only: a count (labelled A1..A10, B1..) or the labels; "
                          "default 40")
    price_cents: int = Field(0, ge=0, le=10**9)

    @model_validator(mode="after")
    def stock_for_items_seats_for_tickets(self) -> NewProduct:
        if self.kind == "item" and self.seats is not None:
            raise ValueError(_("%(sku)s is an item: give 'stock', not 'seats'", sku=self.sku))
        if self.kind == "ticket" and self.stock is not None:
            raise ValueError(_("%(sku)s is a ticket: give 'seats' (a count or labels), "
                               "not 'stock'", sku=self.sku))
        if isinstance(self.seats, int) and not 1 <= self.seats <= MAX_SEATS:
            raise ValueError(_("'seats' must be 1 to %(max)s, got %(got)s", max=MAX_SEATS,
                               got=self.seats))
        if isinstance(self.seats, list):
            labels = self.seats
            if not 1 <= len(labels) <= MAX_SEATS or not all(
                    len(label) <= 16 and SKU_PATTERN.match(label) for label in labels):
                raise ValueError(_("'seats' must list 1-%(max)s labels of up to 16 "
                                   "letters and digits", max=MAX_SEATS))
            if len(set(labels)) != len(labels):
                raise ValueError(_("'seats' has the same label twice"))
        return self


class Reset(Request):
    """What to sell after the reset; without ``products``, the default ones."""

    products: list[NewProduct] | None = Field(None, min_length=1, max_length=MAX_PRODUCTS)

    @model_validator(mode="after")
    def one_sku_each(self) -> Reset:
        skus = [p.sku for p in self.products or ()]
        if len(set(skus)) != len(skus):
            raise ValueError(_("every product needs its own 'sku'"))
        return self


class SettingsChange(Request):
    """Any of the cluster's settings; every instance follows at once."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    strategy: str | None = None
    business_delay_ms: int | None = Field(None, ge=0, le=MAX_BUSINESS_DELAY_MS)
    job_guard: str | None = Field(
        None, max_length=100,
        description="what guards the scheduled jobs: 'strategy' (the strategy's lock), "
                    "'leader' (ZooKeeper leader election), or a guard plugged in from a "
                    "file (LOCKSHOP_EXTRA_GUARDS)")
    job_interval_ms: int | None = Field(None, ge=0, le=MAX_JOB_MS, description="0: jobs off")
    unpaid_expiry_ms: int | None = Field(None, ge=0, le=MAX_JOB_MS)
    reminder_after_ms: int | None = Field(None, ge=0, le=MAX_JOB_MS)
    job_lock_at_least_ms: int | None = Field(None, ge=-1, le=MAX_JOB_MS,
                                             description="-1: half the interval")

    @model_validator(mode="after")
    def something_to_change(self) -> SettingsChange:
        if not self.model_fields_set:  # malformed, not impossible: a 400
            raise PydanticCustomError("nothing_to_change", _(
                "give 'strategy', 'business_delay_ms' or a job setting"))
        return self


# --- answers --------------------------------------------------------------------------

class Error(Answer):
    """Every refusal: a code to act on, and a sentence for a person."""

    error: str = Field(examples=["sold_out"])
    message: str


class Seat(Answer):
    label: str
    taken: bool
    orders: list[int]


class Product(Answer):
    id: int
    sku: str
    name: str
    kind: Literal["item", "ticket"]
    price_cents: int
    initial_stock: int
    stock: int = Field(description="for tickets: free seats")
    seats: list[Seat] | None = None


class ProductList(Answer):
    products: list[Product]


class Stocktake(Answer):
    product_id: int
    initial: int
    stock: int
    sold: int
    strategy: str
    read_lock: Literal["shared", "exclusive", "none", "snapshot"] = Field(
        description="a read lock readers share, an exclusive lock, no lock, or one transaction")
    consistent: bool = Field(description="stock + sold == initial")


class Order(Answer):
    id: int
    product_id: int
    quantity: int
    seat: str | None
    status: Literal["pending", "paid", "cancelled", "expired"]
    instance: str
    strategy: str
    created_at: datetime
    paid_at: datetime | None


class Strategy(Answer):
    name: str
    family: str
    summary: str
    correct_across_instances: bool
    failure_mode: str
    requires: list[str]
    available: bool


class StrategyList(Answer):
    current: str
    strategies: list[Strategy]


class Settings(Answer):
    strategy: str
    business_delay_ms: int
    job_guard: str
    job_interval_ms: int
    unpaid_expiry_ms: int
    reminder_after_ms: int
    job_lock_at_least_ms: int


class ProductAudit(Answer):
    product_id: int
    initial: int
    remaining: int
    sold: int
    oversold: int
    lost_updates: int
    double_booked_seats: int
    retries: int
    stale_writes_rejected: int
    correct: bool


class JobsAudit(Answer):
    correct: bool
    runs: int
    fire_times: int
    duplicate_runs: int
    lost_runs: int
    orders_expired: int
    stock_restored_more_than_once: int
    reminders: int
    duplicate_reminders: int


class Audit(Answer):
    correct: bool
    totals: dict[str, int]
    products: list[ProductAudit]
    jobs: JobsAudit


class ResetDone(Answer):
    reset: bool
    products: int
    audit: Audit


class JobRun(Answer):
    id: int
    job: str
    fire_time: datetime
    instance: str
    guard: str
    outcome: Literal["running", "done", "lost"]
    handled: int
    started_at: datetime


class JobRuns(Answer):
    runs: list[JobRun]


class HoldsQuery(Request):
    """Which holds: those still open, and those that ended at or after ``since``."""

    # Query strings are text: "1.5" is the number here, so this one is not strict.
    model_config = ConfigDict(extra="forbid", strict=False)
    since: float = Field(0.0, ge=0, description="seconds since the epoch (time.time())")


class Hold(Answer):
    id: int
    lock: str
    strategy: str
    owner: str
    fencing_token: int | None
    acquired: float
    released: float | None
    ended: str | None
    read_at: float | None = Field(None, description="when the holder had read what it "
                                                   "decides on (time.time())")
    wrote: bool = Field(description="the holder's write under this hold committed")
    wrote_at: float | None = Field(None, description="when that write committed (time.time())")


class Holds(Answer):
    """This instance's own record of its holds, on its real-time clock."""

    instance: str
    pid: int
    now: float
    forgotten: int = Field(description="finished holds pushed out of the bounded log so far")
    holds: list[Hold]


class LockHolder(Answer):
    owner: str


class LockView(Answer):
    where: str
    holders: list[LockHolder]
    waiting: list[LockHolder]


class ProductLock(Answer):
    product_id: int
    lock: str
    view: LockView | None = Field(description="null where the strategy keeps no lock "
                                              "outside this process")
    held_here: list[Hold]


class LockList(Answer):
    instance: str
    pid: int
    strategy: str
    herd_wakeups: int = Field(description="waiters of this instance woken by a release, "
                                          "under this strategy, since it started")
    locks: list[ProductLock]


class ZooKeeperSession(Answer):
    strategy: str
    session_id: str
    password: str


class ZooKeeperSessions(Answer):
    sessions: list[ZooKeeperSession]


class Health(Answer):
    status: Literal["ok"]
    instance: str


class OpenAPIDocument(Answer):
    """This document: OpenAPI 3.1."""

    openapi: str
    info: dict
    paths: dict
    components: dict
