"""A small HTTP client for one shop instance's admin API (standard library only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


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

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        if self.admin_token:
            request.add_header("Authorization", f"Bearer {self.admin_token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode(errors="replace")
            raise ShopClientError(f"{method} {path} answered {error.code}: {detail}") from None
        except urllib.error.URLError as error:
            raise ShopClientError(f"cannot reach {self.base_url}: {error.reason}") from None
