"""Load runs against the shop's REST API, over HTTP only.

Locustfiles live beside this file; ``locustfile_path(name)`` finds one, so
that tools can run them from anywhere once the package is installed.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def locustfile_path(name: str = "flash_sale") -> Path:
    path = HERE / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no locustfile named {name!r} in {HERE}")
    return path
