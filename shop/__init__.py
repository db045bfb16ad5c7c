"""lockshop: a small multi-instance shop whose order path can be guarded by
any strategy in ``locks``, and an audit that tells which ones oversell."""

from .app import create_app

__all__ = ["create_app"]
