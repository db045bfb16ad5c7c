"""What every lockshop locustfile shares: the instance list and the final audit.

* ``--targets http://127.0.0.1:8000,http://127.0.0.1:8001`` (or the
  ``LOCKSHOP_TARGETS`` variable) lists the instances; every request goes to
  one of them at random, as a load balancer would spread them. Without it,
  ``--host`` is the only target.
* Every order carries an ``Idempotency-Key`` made for it, and an order that
  timed out (``--order-timeout``, seconds), lost its connection or got a 503
  is sent again with the same key, up to ``--order-retries`` times, to any
  instance: as a careful client retries, without ever buying twice.
  ``--order-retries 0`` turns retries off.
* The sale opens once every buyer is in: a buyer may look at the products
  first, but places no order before Locust says the last one has been spawned.
  With ``--open-for SECONDS`` the run ends that long after the doors opened,
  so that a short run on a busy machine still sells for all of its time
  (Locust's own ``--run-time`` counts from the first spawn).
* When the test stops, the shop's audit is read once (on the master in a
  distributed run, never on the workers). If it is not correct, a failure
  entry "AUDIT shop audit" is added to the statistics and Locust exits 1.
"""

from __future__ import annotations

import logging
import random
import uuid

import gevent
import gevent.event
import locust.stats
import requests
from locust import HttpUser, events
from locust.runners import WorkerRunner
from locust.stats import CSV_STATS_INTERVAL_SEC

# The workshop console draws a sale from the stats history while it runs: write it
# out every second, not every five.
locust.stats.CSV_STATS_FLUSH_INTERVAL_SEC = CSV_STATS_INTERVAL_SEC

log = logging.getLogger("lockshop.loadtest")


@events.init_command_line_parser.add_listener
def _add_arguments(parser) -> None:
    parser.add_argument("--targets", type=str, env_var="LOCKSHOP_TARGETS", default="",
                        help="comma-separated base URLs of the shop instances")
    parser.add_argument("--admin-token", type=str, env_var="LOCKSHOP_ADMIN_TOKEN", default="",
                        help="the shop's admin token, to read the audit", is_secret=True)
    parser.add_argument("--order-timeout", type=float, env_var="LOCKSHOP_ORDER_TIMEOUT",
                        default=10.0, help="seconds an order may take before it is retried")
    parser.add_argument("--order-retries", type=int, env_var="LOCKSHOP_ORDER_RETRIES",
                        default=2, help="retries of an order that timed out or got a 503, "
                                        "each with the order's idempotency key")
    parser.add_argument("--open-for", type=float, env_var="LOCKSHOP_OPEN_FOR", default=0.0,
                        help="seconds the sale stays open once every buyer is in; then "
                             "Locust stops (0: until --run-time or Ctrl-C)")


# --- the doors ---------------------------------------------------------------------

#: Set once every buyer is in: Locust has spawned the last one (in a distributed run
#: the master tells each worker).
doors = gevent.event.Event()


@events.init.add_listener
def _keep_the_doors(environment, **_kwargs) -> None:
    def open_the_doors(**_kwargs) -> None:  # Locust says only how many users there are
        doors.set()
        open_for = environment.parsed_options.open_for if environment.parsed_options else 0.0
        if open_for and not isinstance(environment.runner, WorkerRunner):
            # quit() stops the buyers and fires test_stop: the audit below is read as
            # after --run-time.
            gevent.spawn_later(open_for, environment.runner.quit)

    environment.events.spawning_complete.add_listener(open_the_doors)


def targets_of(environment) -> list[str]:
    options = environment.parsed_options
    listed = [t.strip().rstrip("/") for t in (options.targets if options else "").split(",")]
    listed = [t for t in listed if t]
    return listed or [(environment.host or "http://127.0.0.1:8000").rstrip("/")]


def read_audit(base_url: str, token: str = "", timeout: float = 30.0) -> dict:
    """GET /api/admin/audit from one instance; the audit is the same from all of them."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # requests: the HTTP library Locust's own users are built on.
    response = requests.get(f"{base_url}/api/admin/audit", headers=headers, timeout=timeout)
    response.raise_for_status()
    return response.json()


@events.test_stop.add_listener
def _check_audit(environment, **_kwargs) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return  # the master reads it, once
    target = targets_of(environment)[0]
    token = environment.parsed_options.admin_token if environment.parsed_options else ""
    try:
        audit = read_audit(target, token)
    except Exception as error:  # noqa: BLE001 - any failure to read is a failed audit
        _fail_audit(environment, f"could not read the audit from {target}: {error}")
        return
    totals = audit["totals"]
    summary = ", ".join(f"{k} {totals[k]}" for k in
                        ("sold", "remaining", "oversold", "lost_updates", "double_booked_seats"))
    if audit["correct"]:
        log.info("shop audit correct: %s", summary)
    else:
        _fail_audit(environment, f"shop audit NOT correct: {summary}")


def _fail_audit(environment, message: str) -> None:
    log.error(message)
    environment.events.request.fire(request_type="AUDIT", name="shop audit", response_time=0,
                                    response_length=0, exception=AssertionError(message),
                                    context={})
    environment.process_exit_code = 1
    # Locust rewrites its CSV files from a greenlet once per interval, and the
    # run ends right after this event: yield for one interval so the failure
    # is in <prefix>_failures.csv and _stats.csv, not only on the screen.
    gevent.sleep(CSV_STATS_INTERVAL_SEC + 0.2)


class ShopUser(HttpUser):
    """A shopper who talks to a random instance for every request."""

    abstract = True

    def on_start(self) -> None:
        self.targets = targets_of(self.environment)

    def url(self, path: str) -> str:
        return random.choice(self.targets) + path

    def place_order(self, body: dict, name: str) -> dict | None:
        """POST an order with a key of its own; retry what may or may not have been taken.

        A timeout, a dropped connection or a 503 leaves the buyer not knowing
        whether the order was taken; the retry sends the same key, so the shop
        answers with the order the key made, if any, and never makes a second.
        The order (JSON) once placed; None when refused (409, the expected
        answer when stock runs out) or failed.
        """
        doors.wait()  # no order before the sale opens
        options = self.environment.parsed_options
        timeout = options.order_timeout if options else 10.0
        retries = options.order_retries if options else 2
        key = uuid.uuid4().hex
        for attempt in range(retries + 1):
            with self.client.post(self.url("/api/orders"), json=body, timeout=timeout,
                                  headers={"Idempotency-Key": key},
                                  name=name if attempt == 0 else f"{name} [retry]",
                                  catch_response=True) as response:
                if response.status_code == 201:
                    return response.json()
                if response.status_code == 409:
                    response.success()  # sold out or seat taken: the right answer
                    return None
                response.failure(f"{response.status_code or 'no answer'}: "
                                 f"{(response.text or str(response.error))[:200]}")
                if response.status_code not in (0, 503):
                    return None  # an answer a retry would only repeat
            gevent.sleep(min(0.05 * 2 ** attempt, 1.0))
        return None

    def product_ids(self, kind: str) -> list[int]:
        """The ids of the products of ``kind`` ("item" or "ticket"); [] if the list fails."""
        with self.client.get(self.url("/api/products"), name="/api/products",
                             catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"cannot list products: {response.status_code}")
                return []
            return [p["id"] for p in response.json()["products"] if p["kind"] == kind]
