"""The room code: what the instructor projects and every student types to join.

It is short and made of letters and digits that cannot be mistaken for one
another on a projector (no 0/O, no 1/I/L). A student may type it in lower case
or with spaces around it.
"""

from __future__ import annotations

import hmac
import secrets

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def is_code(text: str) -> bool:
    """Whether ``text`` can be a room code (one an instructor chose, to reuse it)."""
    return 4 <= len(text) <= 16 and all(c in CODE_ALPHABET for c in text)


def code_matches(given: object, code: str) -> bool:
    """Whether ``given`` is the room's ``code``, compared in constant time."""
    if not isinstance(given, str) or len(given) > 64:
        return False
    return hmac.compare_digest(given.strip().upper().encode(), code.encode())
