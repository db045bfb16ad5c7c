"""How the reader runs lockshop, so that every command it prints works as printed.

A fresh clone has no ``lockshop`` on the PATH: its front door is the project's ``run``
script (``./run exercise start 3``, or ``~/lockshop/run ...`` from a folder of one's
own), which says how it was called in ``LOCKSHOP_INVOKED_AS``. Installed with pip,
lockshop is ``lockshop``.
"""

from __future__ import annotations

import os

#: Set by the project's ``run`` script to the path it was called by (its ``$0``).
VARIABLE = "LOCKSHOP_INVOKED_AS"


def lockshop_command() -> str:
    """What to type, where the reader stands, to run lockshop again: ``./run``,
    ``~/lockshop/run``, or ``lockshop``."""
    return os.environ.get(VARIABLE) or "lockshop"
