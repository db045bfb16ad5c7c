"""The base every image is built FROM, made here: no registry can be reached, so
``debootstrap`` installs a minimal Debian bookworm into a folder and
``docker import`` makes it an image, as ``debian:bookworm-slim`` is for a user.

Guarantees: the rootfs is made once and kept as a tarball in the runtime folder
(outside the tracked files), so that a warm check only imports it, or finds the image
already in the daemon's data root; a half-made folder or tarball is never kept
(``.partial`` until complete). Like slim, it carries no documentation or
translations, and dpkg installs none later. Its apt sources are those of ``debian:bookworm-slim``
(bookworm, bookworm-updates, bookworm-security), from the same mirror.

How it fails: ``EngineError`` with debootstrap's last line and its log's path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from lockshop.compose.engine import DEBOOTSTRAP, DOCKER, Engine, EngineError
from shop.i18n import _

IMAGE = "lockshop-base:bookworm"
SUITE = "bookworm"
#: The mirror apt uses on a fresh Debian; LOCKSHOP_DEBIAN_MIRROR names another.
MIRROR = os.environ.get("LOCKSHOP_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: {SUITE} {SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {MIRROR.rsplit('/debian', 1)[0]}/debian-security
Suites: {SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
#: dpkg leaves these out of every package (as the slim images do).
SLIM = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
"""


def ensure_base(engine: Engine, cache: Path) -> str:
    """The base image in ``engine``; what it took: "cached", "imported" or "made"."""
    if engine.docker("image", "inspect", IMAGE, check=False).returncode == 0:
        return "cached"
    tarball = cache / f"debian-{SUITE}.tar"
    how = "imported"
    if not tarball.is_file():
        _make_tarball(cache, tarball)
        how = "made"
    with tarball.open("rb") as rootfs:
        done = subprocess.run([DOCKER, "import", "-", IMAGE], stdin=rootfs,
                              env=engine.env, capture_output=True, text=True)
    if done.returncode != 0:
        raise EngineError(_("docker import of %(tarball)s failed: %(said)s", tarball=tarball,
                            said=done.stderr.strip().splitlines()[-1:] or done.returncode))
    return how


def _make_tarball(cache: Path, tarball: Path) -> None:
    folder = cache / f"debian-{SUITE}.partial"
    log = cache / "debootstrap.log"
    shutil.rmtree(folder, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        done = subprocess.run([DEBOOTSTRAP, "--variant=minbase", SUITE, str(folder), MIRROR],
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        raise EngineError(_("debootstrap could not make Debian %(suite)s: %(said)s (log: "
                            "%(log)s)", suite=SUITE, said=lines[-1] if lines else done.returncode,
                            log=log))
    (folder / "etc/apt/sources.list").unlink(missing_ok=True)
    (folder / "etc/apt/sources.list.d/debian.sources").write_text(SOURCES)
    # What slim leaves out too: the downloaded packages, the package lists, the
    # documentation and the translations, now and in every package installed later.
    for cached in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for path in (folder / cached).glob("*"):
            if path.is_file():
                path.unlink()
    for unread in ("usr/share/doc", "usr/share/info", "usr/share/locale"):
        shutil.rmtree(folder / unread, ignore_errors=True)
        (folder / unread).mkdir()
    (folder / "etc/dpkg/dpkg.cfg.d/lockshop-slim").write_text(SLIM)
    # Every image's `apt-get update` fetches the package lists, not their translations.
    (folder / "etc/apt/apt.conf.d/90lockshop-no-translations").write_text(
        'Acquire::Languages "none";\n')
    partial = tarball.with_suffix(".tar.partial")
    done = subprocess.run(["tar", "--numeric-owner", "-C", str(folder), "-cf", str(partial),
                           "."], capture_output=True, text=True)
    shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise EngineError(_("could not pack Debian %(suite)s: %(said)s", suite=SUITE,
                            said=done.stderr.strip()))
    partial.rename(tarball)
