"""Which passwords a person may choose: at least 12 characters, not a common password, not
guessable from a pattern. Pure (no I/O): the list ships inside a package, nothing is
downloaded at run time.

The list is zxcvbn's (MIT, the `zxcvbn` package): the 30,000 most common passwords of public
password dumps, with its estimate of how many guesses a password needs, which also catches
what a list cannot: repeats (`aaaaaaaaaaaa`, `passwordpassword`), keyboard walks
(`qwertyuiop12`), sequences, dates and the person's own address. NIST SP 800-63B asks for
exactly these checks and no composition rules.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from functools import cache

MIN_LENGTH = 12
MAX_LENGTH = 1024
#: zxcvbn scores 0-4; 3 is "safely unguessable" (about 10^8 guesses or more).
MIN_SCORE = 3
#: zxcvbn's own bound: it would refuse longer input (and its cost grows with the length).
_ESTIMATE_CHARS = 72


class WeakPassword(ValueError):
    """The password may not be used (the message says why, without repeating it)."""


@cache
def _common() -> frozenset[str]:
    from zxcvbn.frequency_lists import FREQUENCY_LISTS  # noqa: PLC0415 (zxcvbn's lists are large: only a password change needs them)

    words: str | list[str] = FREQUENCY_LISTS["passwords"]
    return frozenset(words.split(",") if isinstance(words, str) else words)


def check_password(password: str, context: Iterable[str] = ()) -> None:
    """WeakPassword unless `password` may be chosen. `context`: words a guesser would try
    first for this person (their address, name, the workspace)."""
    if len(password) < MIN_LENGTH:
        raise WeakPassword(f"a password needs at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise WeakPassword(f"a password may have at most {MAX_LENGTH} characters")
    if any(0xD800 <= ord(c) <= 0xDFFF or c == "\x00" for c in password):
        raise WeakPassword("a password must be text (no NUL, no unpaired surrogate)")
    if password.strip().lower() in _common():
        raise WeakPassword("this is one of the most common passwords: choose another")
    from zxcvbn import zxcvbn  # noqa: PLC0415 (see above)

    hints = [w for w in (c.strip().lower() for c in context) if w]
    hints += [part for w in hints for part in w.replace("@", " ").replace(".", " ").split() if len(part) > 2]
    estimate = zxcvbn(password[:_ESTIMATE_CHARS], user_inputs=hints)
    if estimate["score"] < MIN_SCORE:
        raise WeakPassword(
            "this password is too easy to guess (a common word or password, a repeat, a keyboard"
            " row, a date or your own name): a few unrelated words make a good one"
        )


def temporary_password() -> str:
    """A password for a person to use once (they choose their own at the next sign-in)."""
    return secrets.token_urlsafe(15)  # 20 characters, 120 random bits
