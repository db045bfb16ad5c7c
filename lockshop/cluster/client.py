"""The tooling's one HTTP client for a shop instance: admin calls, orders, metrics.

Standard library only, so that every command can use it without extras.
Admin calls raise ``ShopClientError`` with the answer's status and text;
``order`` returns the status instead, since a refusal is often the lesson.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from shop.i18n import _


class ShopClientError(RuntimeError):
    pass


class ShopClient:
    def __init__(self, base_url: str, admin_token: str | None = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.admin_token = admin_token
        self.timeout = timeout

    def reset(self, products: list[dict] | None = None) -> dict:
        return self._call("POST", "/api/admin/reset", {"products": products} if products else {})

    def set_settings(self, **settings: object) -> dict:
        return self._call("PUT", "/api/admin/settings", settings)

    def audit(self) -> dict:
        return self._call("GET", "/api/admin/audit")

    def order(self, product_id: int = 1, *, key: str | None = None,
              timeout: float | None = None, **fields: object) -> int | str:
        """Place an order (with ``key`` as its Idempotency-Key, waiting at most ``timeout``
        seconds); its HTTP status, or why there was no answer."""
        return self.place(product_id, key=key, timeout=timeout, **fields)[0]

    def place(self, product_id: int = 1, *, key: str | None = None,
              timeout: float | None = None, **fields: object) -> tuple[int | str, dict | None]:
        """As ``order``, and the order the shop answered with (None unless 201)."""
        try:
            answer = self._send("POST", "/api/orders", {"product_id": product_id, **fields},
                                headers={"Idempotency-Key": key} if key else {},
                                timeout=timeout)
            return 201, json.loads(answer)
        except urllib.error.HTTPError as error:
            return error.code, None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            return _("no answer (%(reason)s)", reason=why_no_answer(error)), None

    def get(self, path: str) -> dict:
        """Any JSON answer of the shop's, by path ("/api/strategies")."""
        return self._call("GET", path)

    def metrics(self) -> str:
        """The instance's ``/metrics`` text."""
        return self._call_raw("GET", "/metrics").decode()

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        return json.loads(self._call_raw(method, path, body))

    def _call_raw(self, method: str, path: str, body: dict | None = None) -> bytes:
        """``_send``, with every failure said as a ``ShopClientError``."""
        try:
            return self._send(method, path, body)
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode(errors="replace")
            raise ShopClientError(f"{method} {path} answered {error.code}: {detail}") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            reason = getattr(error, "reason", error)
            raise ShopClientError(f"cannot reach {self.base_url}: {reason}") from None

    def _send(self, method: str, path: str, body: dict | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  **(headers or {})})
        if self.admin_token:
            request.add_header("Authorization", f"Bearer {self.admin_token}")
        with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
            return response.read()


def why_no_answer(error: BaseException) -> str:
    """Why a request got no answer, in the reader's language (the libraries' own words
    are English: "timed out", "Remote end closed connection without response")."""
    reason = getattr(error, "reason", error)
    text = str(reason).lower()
    if isinstance(reason, TimeoutError) or "timed out" in text:
        return _("timed out")
    if isinstance(reason, ConnectionRefusedError) or "refused" in text:
        return _("connection refused")
    if "closed" in text or isinstance(reason, ConnectionError):
        return _("the connection closed without an answer")
    return str(reason)
