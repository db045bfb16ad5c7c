"""The room's code: made once, kept in the runtime folder, and the same after a restart.

Thirty students typed it from the projector; a restart of ``lockshop up`` (a crash, a
laptop that slept) must not make them type another. ``--room-code`` chooses one.
"""

from __future__ import annotations

from pathlib import Path

from lockshop.room.codes import is_code, new_code

#: Where, in the console's runtime folder, the code is kept.
FILE_NAME = "room-code"


def valid_code(text: str) -> str:
    """``text`` as a room code (upper case), or ValueError."""
    code = text.strip().upper()
    if not is_code(code):
        raise ValueError(text)
    return code


def kept_code(folder: Path, chosen: str | None = None) -> str:
    """``chosen``, else the code kept in ``folder``, else a new one; kept for next time."""
    path = folder / FILE_NAME
    code = chosen
    if code is None and path.exists():
        try:
            code = valid_code(path.read_text())
        except ValueError:
            code = None  # edited by hand into something no student could type: a new one
    code = code or new_code()
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(code + "\n")
    return code
