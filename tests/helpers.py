"""Small helpers shared by tests."""

from __future__ import annotations

import inspect
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
import requests
from sqlalchemy import select

from locks import Backends
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.processes import LISTENING_PORTS, port_is_free
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from shop.errors import SeatTaken, SoldOut
from shop.orders.order_path import OrderContext, OrderRequest, place_order
from shop.orders.order_strategies import Strategies
from shop.store.db import engine_of
from shop.store.models import Order, Product, Setting

T = TypeVar("T")


# --- waiting on state ------------------------------------------------------------------

def wait_for(condition: Callable[[], T], *, timeout: float = 10.0, interval: float = 0.01,
             message: str | None = None) -> T:
    """Wait until ``condition()`` is true, and return what it returned.

    How a test orders its threads and processes: by state it can see (a lock's
    waiters in ``factory.look(name)``, the hold log, rows, metrics, what a thread
    recorded), never by a sleep long enough on a quiet machine, as kazoo's lock
    tests ``wait(lambda: len(lock.contenders()) == 6)``. After ``timeout``
    seconds the test fails, saying what it waited for (``message``, else the
    condition's source) and what the condition last returned.
    """
    deadline = time.monotonic() + timeout
    while not (seen := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout:g} s for {message or _source(condition)}; "
                        f"last seen: {seen!r}")
        time.sleep(interval)  # the poll itself: it orders nothing
    return seen


def _source(condition: Callable) -> str:
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)


def snapshot(app) -> dict:
    """Everything a request could change: products, orders, settings."""
    sessions = app.extensions["lockshop"].sessions
    with sessions.begin() as session:
        return {
            "products": [p.as_dict() for p in session.scalars(select(Product).order_by(Product.id))],
            "orders": [o.as_dict() for o in session.scalars(select(Order).order_by(Order.id))],
            "settings": dict(session.execute(select(Setting.key, Setting.value)).all()),
        }


def send(client, method: str, path: str, body):
    """Send ``body`` as JSON, or as raw bytes when it is bytes (malformed on purpose)."""
    if isinstance(body, bytes):
        return client.open(path, method=method, data=body, content_type="application/json")
    return client.open(path, method=method, json=body)


@contextmanager
def chromium() -> Iterator:
    """A real Chromium (Debian's, which ./run installs) driven by Playwright; the test is
    skipped where it is missing (failed under LOCKSHOP_REQUIRE_SERVERS, as in CI)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require(path is not None, "Chromium is not installed (Debian: chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def ports_for_up(instances: int) -> int:
    """The first of ``instances`` free ports in a row, below any ``free_port()`` pick,
    for ``up --port``.

    Not the kernel's pick nor ``free_port()``'s: ``up`` starts its Redis and ZooKeeper
    servers on ``free_port()``'s ports and binds its control on one the kernel picks, and
    either could take an instance's port (a clean-clone run once failed on that)."""
    below = LISTENING_PORTS.start
    for _ in range(1000):
        port = random.randrange(10_000, below - instances)
        if all(port_is_free(p) for p in range(port, port + instances)):
            return port
    raise RuntimeError(f"no {instances} free ports in a row in 10000-{below}")


@contextmanager
def lockshop_up(*args: str, cwd: Path, env: dict[str, str] | None = None,
                language: str = "en") -> Iterator[str]:
    """``lockshop up *args`` as a user starts it, in ``language`` (English unless asked,
    whatever the shell's LANG: the tests read what it prints): what it printed until
    "Ctrl-C stops them all"; then SIGTERM, as Ctrl-C would, and a wait for it to clean up."""
    env = {**(os.environ if env is None else env), "LANGUAGE": language}
    if "--control-port" not in args:  # its default is fixed (8090): tests run side by side
        args = (*args, "--control-port", str(_control_port(args)))
    process = subprocess.Popen([sys.executable, "-m", "lockshop.cli", "up", *args], cwd=cwd,
                               env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        yield "".join(lines)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        process.stdout.close()


def _control_port(up_args: tuple[str, ...]) -> int:
    """A free port for ``up``'s control, out of the instances' range if ``--port`` gives it."""
    first = int(up_args[up_args.index("--port") + 1]) if "--port" in up_args else 8000
    while (port := ports_for_up(1)) in range(first, first + 64):
        pass
    return port


def strategies_for(sessions) -> Strategies:
    """The shop's strategies on the database of ``sessions``."""
    dialect = engine_of(sessions).dialect.name
    return Strategies(Backends(), "mysql" if dialect == "mariadb" else dialect)


def runner_for(sessions, name: str):
    """How the shop places an order under ``name``, on the database of ``sessions``."""
    return strategies_for(sessions).runner(name)


def concurrent_sale(sessions, name: str, requests: list[OrderRequest], delay_ms: int, *,
                    all_read_first: bool = False) -> dict:
    """Every buyer orders at the same moment (a barrier) through ``name``; count outcomes.

    ``all_read_first``, for a lock that excludes nobody (``none``): the business delay
    begins once every buyer has read, so that no read comes after a write however late a
    thread is scheduled (with a core kept busy, one buyer once read after another's
    write, 400 ms of delay notwithstanding, and a second seat was double-booked)."""
    runner = runner_for(sessions, name)
    context = OrderContext("test", name, business_delay_ms=delay_ms, lock_timeout_ms=30_000)
    start = threading.Barrier(len(requests))
    outcomes: list[str] = []
    if all_read_first:
        factory = strategies_for(sessions).lock_factory(name)
        everyone_read = threading.Barrier(len(requests))

        def delay_after_every_read(seconds: float) -> None:
            everyone_read.wait(30)
            time.sleep(seconds)

        def runner(database, request, context):
            return place_order(database, factory, request, context,
                               sleep=delay_after_every_read)

    def buyer(request: OrderRequest) -> None:
        start.wait()
        try:
            runner(engine_of(sessions), request, context)
            outcomes.append("ok")
        except (SoldOut, SeatTaken):
            outcomes.append("refused")

    threads = [threading.Thread(target=buyer, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"ok": outcomes.count("ok"), "refused": outcomes.count("refused")}


def order(cluster, instance: int, product: int = 1) -> requests.Response:
    """One order for ``product`` on the cluster's ``instance``-th instance."""
    return requests.post(f"{cluster.urls[instance]}/api/orders", json={"product_id": product},
                         timeout=60)


def pause_the_holder(cluster, admin, strategy: str, paused_for: float):
    """Instance 0 takes the lock and is SIGSTOPped inside its 1 s business delay for
    ``paused_for`` seconds, while instance 1 sells (with no delay). Return both answers:
    the paused order's, once it has resumed, and the second buyer's."""
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy=strategy, business_delay_ms=1000)
    answers = {}

    def first_order():
        answers["paused"] = order(cluster, 0)

    thread = threading.Thread(target=first_order)
    thread.start()
    in_its_business_delay(cluster, 0)
    os.killpg(cluster.instances[0].process.pid, signal.SIGSTOP)
    try:
        time.sleep(paused_for)  # a pause past the lease (or session): time is the point
        # The paused order read its delay already; the second buyer's work must
        # fit in its own lease, or it would lose its lock too.
        admin.set_settings(business_delay_ms=0)
        answers["second"] = order(cluster, 1)
    finally:
        os.killpg(cluster.instances[0].process.pid, signal.SIGCONT)
    thread.join()
    return answers["paused"], answers["second"]


def hold_and_stop(cluster, instance: int, product: int = 1) -> threading.Thread:
    """Send an order to ``instance``; return once it sits in its critical section (it holds
    the lock, has read the stock, and is in its business delay)."""
    def order():
        try:
            requests.post(f"{cluster.urls[instance]}/api/orders",
                          json={"product_id": product}, timeout=60)
        except requests.RequestException:
            pass  # its instance may be killed meanwhile
    thread = threading.Thread(target=order)
    thread.start()
    in_its_business_delay(cluster, instance, product)
    return thread


def in_its_business_delay(cluster, instance: int, product: int = 1) -> dict:
    """Wait until an order on ``instance`` holds the lock of ``product`` and has read the
    stock, as the instance's own hold log says: it is in its business delay. The hold."""
    url, lock = cluster.urls[instance], f"product:{product}"

    def read_under_the_lock() -> list[dict]:
        log = requests.get(f"{url}/api/locks/holds", params={"since": time.time()}, timeout=10)
        return [h for h in log.json()["holds"]
                if h["lock"] == lock and h["released"] is None and h["read_at"] is not None]

    return wait_for(read_under_the_lock, message=f"an order on {url} to hold {lock} and read")[0]


class Steady:
    """Clients that send one request after another until the block ends (client n to the
    n-th instance, round the cluster), by default an order for product 1: a sale going on
    while a test kills, pauses or cuts something. Every answer is kept, in order, with
    the instance it came from."""

    def __init__(self, urls: list[str], clients: int = 6,
                 send: Callable[[requests.Session, str], requests.Response] | None = None):
        self.urls, self.clients = urls, clients
        self.send = send or (lambda http, url: http.post(f"{url}/api/orders",
                                                         json={"product_id": 1}, timeout=30))
        self.answers: list[tuple[int, requests.Response]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(n,))
                         for n in range(clients)]

    def _client(self, n: int) -> None:
        instance = n % len(self.urls)
        with requests.Session() as http:
            while not self._stop.is_set():
                self.answers.append((instance, self.send(http, self.urls[instance])))

    def __enter__(self) -> Steady:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def statuses(self, since: int = 0) -> Counter:
        """Answers by status code, from the ``since``-th answer on."""
        return Counter(answer.status_code for _, answer in self.answers[since:])

    def errors(self) -> list[str]:
        """The error codes of the 503s (``backend_unavailable``, ``lock_timeout``...)."""
        return [answer.json()["error"] for _, answer in self.answers
                if answer.status_code == 503]

    def selling(self, since: int = 0) -> set[int]:
        """The instances that sold (answered 201) from the ``since``-th answer on."""
        return {instance for instance, answer in self.answers[since:]
                if answer.status_code == 201}


# --- a flash sale on real instances ---------------------------------------------------

FLASH_SALE_STOCK = 10
FLASH_SALE_BUYERS = 30
FLASH_SALE_DELAY_MS = 100


def flash_sale(cluster: Cluster, strategy: str, instances: int) -> tuple[dict, Counter]:
    """``FLASH_SALE_BUYERS`` buy one unit each, spread over the first ``instances`` instances.

    Every buyer is released at once by a barrier, and the business delay (far
    longer than a request's own work) keeps each critical section open long
    enough that sections on different instances must overlap.
    """
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "hot", "stock": FLASH_SALE_STOCK}])
    admin.set_settings(strategy=strategy, business_delay_ms=FLASH_SALE_DELAY_MS)
    targets = cluster.urls[:instances]
    start = threading.Barrier(FLASH_SALE_BUYERS)
    served_by: Counter = Counter()
    statuses: Counter = Counter()

    def buyer(n: int) -> None:
        with requests.Session() as http:
            start.wait()
            response = http.post(f"{targets[n % len(targets)]}/api/orders",
                                 json={"product_id": 1}, timeout=60)
            statuses[response.status_code] += 1
            served_by[response.headers["X-Lockshop-Instance"]] += 1

    threads = [threading.Thread(target=buyer, args=(n,)) for n in range(FLASH_SALE_BUYERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses) <= {201, 409}, statuses
    return admin.audit(), served_by


def wait_until_available(factory, seconds: float = 10.0) -> None:
    """A ZooKeeper factory connects in the background: give it its moment."""
    wait_for(factory.available, timeout=seconds,
             message=f"the {factory.strategy.name} factory's backend to answer")


# --- skipping loudly where a server is missing (failing instead in CI) -----------------

REQUIRE_SERVERS = os.environ.get("LOCKSHOP_REQUIRE_SERVERS") == "1"


def require(condition: bool, reason: str) -> None:
    """Skip loudly when ``condition`` is false; fail instead when CI requires servers."""
    if condition:
        return
    if REQUIRE_SERVERS:
        pytest.fail(f"LOCKSHOP_REQUIRE_SERVERS=1 but {reason}")
    pytest.skip(f"SKIPPED FOR A MISSING SERVER: {reason}")


def require_zookeeper() -> None:
    require(zookeeper_installed(),
            "ZooKeeper is not installed (./run installs it: apt-get install zookeeper)")


# --- a student's class in a lock host ----------------------------------------------------

@contextmanager
def hosted_student(tmp_path: Path, exercise, module: str, base: str) -> Iterator[tuple]:
    """A student's file whose class is ``module``'s ``base`` and which, as it loads, writes
    down the process it loads in; started in a lock host for ``exercise`` (``(host,
    spec)``, closed after). Checked first: it loaded in the host, never in the grader."""
    from lockshop.exercises import grader

    student = tmp_path / "mine.py"
    student.write_text("import os\nimport pathlib\n\n"
                       f"pathlib.Path({str(tmp_path / 'pid')!r}).write_text(str(os.getpid()))\n"
                       f"from {module} import {base}\n\n\n"
                       f"class Mine({base}):\n    pass\n")
    host, spec = grader.start_host(f"{student}:Mine", exercise)
    try:
        assert int((tmp_path / "pid").read_text()) == host.process.pid != os.getpid()
        assert not any(str(student) in str(getattr(module, "__file__", ""))
                       for module in list(sys.modules.values()))
        yield host, spec
    finally:
        host.close()


def step_that_says_where_it_runs(folder: Path, placing: str) -> Path:
    """A student's order step (``mine.py``, class ``Mine``) that calls
    ``shop.orders.transactions.<placing>`` and writes the pid of the process that loaded
    it to ``folder/loaded``, and of the one that placed an order to ``folder/placed``."""
    student = folder / "mine.py"
    student.write_text(
        "import os\nimport pathlib\nimport time\n\n"
        f"pathlib.Path({str(folder / 'loaded')!r}).write_text(str(os.getpid()))\n"
        "from shop.orders.custom_steps import OrderStep\n"
        f"from shop.orders.transactions import {placing}\n\n\n"
        "class Mine(OrderStep):\n"
        "    def place(self, database, request, context, kind=None, sleep=time.sleep):\n"
        f"        pathlib.Path({str(folder / 'placed')!r}).write_text(str(os.getpid()))\n"
        f"        return {placing}(database, request, context, kind, sleep)\n")
    return student
