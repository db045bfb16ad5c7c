"""The workshop cluster in containers, built and run for real: ``lockshop compose check``
(``check.py``) on a Docker daemon of its own (``engine.py``), FROM a Debian base it makes
(``base_image.py``), with the images docker-compose.yml names (``images.py``).

Tooling: the served app (``shop/``) never imports it.
"""
