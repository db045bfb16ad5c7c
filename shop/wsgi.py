"""The WSGI entry point for gunicorn: ``gunicorn shop.wsgi:app``.

Configuration comes from ``LOCKSHOP_*`` environment variables. Imported in
the worker process, which also runs this instance's job scheduler.
"""

from shop.app import create_app
from shop.jobs.scheduler import JobScheduler

app = create_app()
JobScheduler(app.extensions["lockshop"]).start()
