"""The served app: what gunicorn runs (``shop.wsgi:app``).

It never imports the tooling around it (``lockshop``) nor the load tests;
``tests/test_boundaries.py`` holds it to that.
"""
