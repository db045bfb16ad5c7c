"""The images, built as docker-compose.yml says (its ``build`` sections: context,
Dockerfile, target), FROM the base this check made.

Guarantees: every image the compose file names is built from the project's own files
(the file a user builds is the file the check builds); each is built once however many
services use it, in the file's order, the ``shop`` stage before the ``workshop`` stage
that starts from it. Builds run on the host's network: the daemon makes no NAT
(``engine.py``), and apt inside a build needs Debian's mirror. A build's output goes to
a log of its own in the runtime folder.

How it fails: ``EngineError`` naming the image, the build's last line and its log.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from lockshop.compose.engine import DOCKER, Engine, EngineError
from shop.i18n import _

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class ImageBuild:
    image: str
    context: Path
    dockerfile: str
    target: str | None


def image_builds(compose_file: Path) -> list[ImageBuild]:
    """Every image the compose file builds, once each, in the file's order."""
    services = yaml.safe_load(compose_file.read_text())["services"]
    builds: dict[str, ImageBuild] = {}
    for service in services.values():
        build = service.get("build")
        if not build or service["image"] in builds:
            continue
        if isinstance(build, str):
            build = {"context": build}
        builds[service["image"]] = ImageBuild(
            image=service["image"], context=compose_file.parent / build["context"],
            dockerfile=build.get("dockerfile", "Dockerfile"), target=build.get("target"))
    return list(builds.values())


def build(engine: Engine, image: ImageBuild, base: str, logs: Path) -> None:
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"build-{image.image}.log"
    command = [DOCKER, "build", "--network", "host", "--build-arg", f"BASE={base}",
               "--file", str(image.context / image.dockerfile), "--tag", image.image]
    if image.target:
        command += ["--target", image.target]
    with log.open("w") as out:
        done = subprocess.run([*command, str(image.context)], env=engine.env, stdout=out,
                              stderr=subprocess.STDOUT)
    if done.returncode != 0:
        # The builder colours its errors: the line is said without the escapes.
        text = ANSI_ESCAPE.sub("", log.read_text(errors="replace"))
        lines = [line for line in text.splitlines() if line.strip()]
        raise EngineError(_("building %(image)s failed: %(said)s (log: %(log)s)",
                            image=image.image, said=lines[-1] if lines else done.returncode,
                            log=log))


def size_mb(engine: Engine, image: str) -> float:
    """The image's size as ``docker images`` shows it (its layers and the base's), in MB."""
    size = engine.docker("image", "inspect", "--format", "{{.Size}}", image).stdout.strip()
    return int(size) / 1e6


#: Where Debian keeps the certificate authorities a machine added (update-ca-certificates).
LOCAL_AUTHORITIES = Path("/usr/local/share/ca-certificates")


def stage_certificates(folder: Path) -> int:
    """Copy this machine's added certificate authorities where the shop's Dockerfile looks
    for them (its pip step reaches PyPI through a proxy that these sign for); how many."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    found = sorted(LOCAL_AUTHORITIES.glob("**/*.crt")) if LOCAL_AUTHORITIES.is_dir() else []
    for number, certificate in enumerate(found):
        shutil.copyfile(certificate, folder / f"{number}.crt")
    return len(found)
