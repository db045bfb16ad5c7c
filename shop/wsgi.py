"""The WSGI entry point for gunicorn: ``gunicorn shop.wsgi:app``.

Configuration comes from ``LOCKSHOP_*`` environment variables.
"""

from .app import create_app

app = create_app()
