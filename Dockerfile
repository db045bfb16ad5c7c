# lockshop's images, from one base (BASE: a public Debian by default; the check
# `./run compose check` passes the Debian it made itself, having no registry):
#
#   python     Debian's Python and the project's requirements (no code: a change of the
#              code rebuilds neither this nor the workshop's Debian packages)
#   shop       every shop instance and Locust run from it (docker-compose.yml)
#   workshop   the whole workshop in one container, `lockshop up` with its own Redis,
#              ZooKeeper and MariaDB programs and the room's sandbox
#              (docs/operations/compose.md: for an instructor whose laptop is not Linux)
ARG BASE=debian:bookworm-slim
FROM ${BASE} AS python
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH PYTHONPATH=/app
# One pip layer, from pyproject.toml alone, so that a change of the code rebuilds none
# of it: the app's requirements and the extras a container uses. matplotlib draws the
# demo's report, which no container writes (60 MB less). Certificate authorities in
# .lockshop/compose/certificates (none on a user's machine; `./run compose check` puts
# there those its machine added to Debian's, for a network that reaches PyPI through an
# intercepting proxy) are trusted by this step alone, and not kept in the image.
COPY pyproject.toml .lockshop/compose/certificate[s] /tmp/build/
RUN python3 -m venv /opt/venv \
    && python3 -c 'import tomllib; project = tomllib.load(open("/tmp/build/pyproject.toml", "rb"))["project"]; extras = project["optional-dependencies"]; wanted = project["dependencies"] + [d for e in ("postgres", "redis", "zookeeper", "mysql", "load") for d in extras[e]]; print("\n".join(d for d in wanted if not d.startswith("matplotlib")))' > /tmp/build/requirements.txt \
    && cat /etc/ssl/certs/ca-certificates.crt $(ls /tmp/build/*.crt 2>/dev/null) > /tmp/build/trusted.pem \
    && PIP_CERT=/tmp/build/trusted.pem pip install -r /tmp/build/requirements.txt \
    && rm -rf /tmp/build /root/.cache
WORKDIR /app

FROM python AS shop
# The project on the virtual environment's path, as an editable install puts it: for every
# Python started here, the room's sandbox among them, which passes no PYTHONPATH on.
RUN echo /app > "$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/lockshop.pth"
# The code runs where it is copied (PYTHONPATH), as `./run` runs it from a clone.
COPY locks locks
COPY shop shop
COPY lockshop lockshop
COPY loadtest loadtest
EXPOSE 8000
# The same server the launcher runs: one worker process per instance, so
# that an "instance" is one process (the in-process lock's scope).
CMD ["gunicorn", "lockshop.console.instance:app", "--bind", "0.0.0.0:8000", "--workers", "1", \
     "--worker-class", "gthread", "--threads", "16", "--graceful-timeout", "5", \
     "--no-control-socket"]
# Health checks are bash, not Python: a dozen containers ask every few seconds, and a
# loaded machine must not spend its cores starting interpreters. The start period is long
# for a loaded machine's sake: the first success counts at once, failures only after it.
HEALTHCHECK --interval=3s --timeout=10s --start-period=300s --retries=3 CMD ["bash", "-c", \
    "exec 3<>/dev/tcp/127.0.0.1/8000 && printf 'GET /api/health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

FROM python AS workshop
# What `./run` installs on a Debian machine for `lockshop up` and the room: the servers'
# programs (each started by lockshop on a port of its own), the room's MariaDB and the
# sandbox's tools (nftables: the wall that keeps the student's user off the grader's
# ZooKeeper, in each grading's own network namespace, which NET_ADMIN lets it make).
# Not PostgreSQL: `up` runs on SQLite here, as it does by default.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       redis-server zookeeper libslf4j-java default-jre-headless mariadb-server \
       bubblewrap util-linux procps nftables \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
RUN echo /app > "$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/lockshop.pth"
COPY locks locks
COPY shop shop
COPY lockshop lockshop
COPY loadtest loadtest
# The control and the room (8090) and the three instances (8000-8002).
EXPOSE 8000 8001 8002 8090
# Docker mounts a container's /sys/fs/cgroup read-only, so the room's memory, process and
# total CPU limits cannot be set in here: `up` would refuse to open the room, and says so.
# The flag opens it knowingly (up prints what does not hold; the console shows it in red).
CMD ["python3", "-m", "lockshop.cli", "up", "--host", "0.0.0.0", "--room-without-limits"]
