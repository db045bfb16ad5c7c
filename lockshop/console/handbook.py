"""The handbook, served by ``lockshop up``'s control so that the console can link to it.

The site is the one ``./run docs build`` writes (MkDocs, from ``docs/`` and
``mkdocs.yml`` at the project's root). When it has not been built, the first
request builds it into the runtime folder (a few seconds), so a room needs no
step by hand and no internet: the built site loads nothing from elsewhere.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

from shop.i18n import _

PROJECT = Path(__file__).resolve().parents[2]
BUILT = PROJECT / ".lockshop" / "handbook"


class Handbook:
    def __init__(self, runtime: Path) -> None:
        # Absolute: mkdocs runs in the project's folder, and the runtime folder may be
        # relative to wherever ``lockshop up`` was started.
        self._own = (runtime / "handbook").resolve()
        self._guard = threading.Lock()

    def folder(self) -> Path | None:
        """Where the built site is, building it once if need be; None if it cannot be."""
        for folder in (BUILT, self._own):
            if (folder / "index.html").exists():
                return folder
        config = PROJECT / "mkdocs.yml"
        mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
        if not config.exists() or mkdocs is None:
            return None
        with self._guard:
            if not (self._own / "index.html").exists():
                built = subprocess.run([mkdocs, "build", "--quiet", "-f", str(config), "-d",
                                        str(self._own)], cwd=PROJECT, capture_output=True,
                                       text=True, timeout=300, check=False)
                if built.returncode != 0:
                    print(_("the handbook could not be built:") + "\n" + built.stderr,
                          file=sys.stderr)
        return self._own if (self._own / "index.html").exists() else None
