"""What every benchmark does with its figures: it says what it measures as it goes
(on stderr, so that the table on stdout stays clean), and writes the figures as
JSON with the machine they were measured on. Tests never assert them."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def write_json(output: Path, figures: dict) -> None:
    """``figures`` as JSON in ``output`` (its folder made if need be), with the machine."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({**figures, "machine": {
        "cpus": os.cpu_count(), "python": sys.version.split()[0],
        "platform": platform.platform()}}, indent=2) + "\n")
