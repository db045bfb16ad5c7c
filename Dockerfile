# The shop image: every instance, and Locust, run from it (docker-compose.yml).
FROM python:3.11-slim

WORKDIR /app
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

COPY pyproject.toml README.md ./
COPY locks locks
COPY shop shop
# For the console's page, which each instance serves beside the shop (lockshop/console).
COPY lockshop lockshop
COPY loadtest loadtest
RUN pip install ".[postgres,redis,zookeeper,load]"

EXPOSE 8000
# The same server the launcher runs: one worker process per instance, so
# that an "instance" is one process (the in-process lock's scope).
CMD ["gunicorn", "lockshop.console.instance:app", "--bind", "0.0.0.0:8000", "--workers", "1", \
     "--worker-class", "gthread", "--threads", "16", "--graceful-timeout", "5", \
     "--no-control-socket"]
