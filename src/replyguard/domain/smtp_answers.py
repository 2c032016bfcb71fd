"""What an SMTP refusal means, and whose problem it is: a pure function of stage, code and text.

The transport reports *that* a send was refused; this module says *why*, because the right
reaction differs (docs/architecture.md, "When a send is refused"):

| blame          | examples                                             | reaction                        |
|----------------|------------------------------------------------------|---------------------------------|
| `ADDRESS`      | 550 5.1.1 user unknown, 5.1.2 no such domain         | hard bounce: suppress, stop     |
| `MAILBOX_FULL` | 452 at RCPT, 4.2.2 / 5.2.2, 552 exceeded storage     | soft bounce: retry much later   |
| `SENDER`       | 535 bad password, 530 auth needed, 5xx to MAIL FROM, | our mailbox's problem: pause it |
|                | relaying denied, SPF/DKIM/DMARC 5.7.23-27            | and tell its owner              |
| `NONE`         | anything else                                        | retry (4xx) or fail the step    |

Enhanced status codes (RFC 3463) decide when present; the basic code and a few well-known
phrases decide otherwise. Only clear cases are automated: an unclear 5xx fails the step and a
person decides.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Stage(enum.StrEnum):
    SESSION = "session"  # greeting, EHLO, STARTTLS, AUTH: nothing about this message
    MAIL = "mail"  # MAIL FROM: about our envelope sender
    RCPT = "rcpt"  # RCPT TO: about the recipient address
    DATA = "data"  # the DATA command, before any content
    END = "end"  # the answer to the final dot


class Blame(enum.StrEnum):
    NONE = "none"
    ADDRESS = "address"  # the recipient address does not exist: a hard bounce
    MAILBOX_FULL = "mailbox_full"  # the recipient's mailbox is full: a soft bounce
    SENDER = "sender"  # our mailbox, credentials or reputation: pause the mailbox


@dataclass(frozen=True, slots=True)
class Verdict:
    temporary: bool  # worth trying again later (4xx, or nothing wrong with this message)
    blame: Blame


_ENHANCED = re.compile(r"^\s*([245])\.(\d{1,3})\.(\d{1,3})\b")
_ADDRESS_DETAILS = {(1, 1), (1, 2), (1, 3), (1, 6), (1, 10), (2, 1)}
_AUTH_DETAILS = {(7, 0), (7, 8), (7, 9), (7, 11), (7, 13), (7, 14)}
_SENDER_AUTH_DETAILS = {(7, 23), (7, 24), (7, 25), (7, 26), (7, 27)}  # SPF, DKIM, DMARC, rDNS
_UNKNOWN_USER = re.compile(
    r"user unknown|unknown user|no such (user|mailbox|recipient|address)|does ?n[o']t exist"
    r"|not exist|invalid (recipient|mailbox|address)|recipient (unknown|not found)|mailbox not found"
    r"|unrouteable|no mailbox",
    re.IGNORECASE,
)
_FULL = re.compile(
    r"mailbox (is )?full|over ?quota|quota exceeded|exceeded storage|insufficient storage", re.I
)
_ABOUT_US = re.compile(
    r"relay|\bspf\b|\bdkim\b|\bdmarc\b|block ?list|black ?list|spamhaus|reputation"
    r"|authenticat|not (authorized|permitted|allowed) to send|sender (address )?(rejected|denied)",
    re.IGNORECASE,
)


def enhanced_code(text: str) -> tuple[int, int, int] | None:
    match = _ENHANCED.match(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def classify(stage: Stage, code: int, text: str) -> Verdict:
    """Whose problem a refusal is. `text` is the server's answer without the basic code."""
    enhanced = enhanced_code(text)
    detail = enhanced[1:] if enhanced else None
    temporary = code < 500
    if stage is Stage.SESSION:
        # The server would not talk to us at all: configuration or credentials, never the
        # message. A 4xx (busy, temporary auth failure) is just a retry.
        return Verdict(True, Blame.SENDER if code >= 500 else Blame.NONE)
    if code == 530 or (not temporary and detail in _AUTH_DETAILS | _SENDER_AUTH_DETAILS):
        return Verdict(True, Blame.SENDER)
    if detail == (2, 2) or (detail is None and _FULL.search(text)) or _full_by_code(stage, code, detail):
        return Verdict(True, Blame.MAILBOX_FULL)
    if temporary:
        return Verdict(True, Blame.NONE)
    if stage is Stage.MAIL:
        # A refused envelope sender is ours to fix, unless the refusal is about this message
        # (5.3.4 too big, 5.5.x a parameter we sent).
        if detail == (3, 4) or (detail is not None and detail[0] == 5):
            return Verdict(False, Blame.NONE)
        return Verdict(True, Blame.SENDER)
    if detail in _ADDRESS_DETAILS or (detail is None and _address_by_text(stage, code, text)):
        return Verdict(False, Blame.ADDRESS)
    if _ABOUT_US.search(text) and (detail is None or detail[0] == 7):
        return Verdict(True, Blame.SENDER)
    return Verdict(False, Blame.NONE)


def _full_by_code(stage: Stage, code: int, detail: tuple[int, int] | None) -> bool:
    """452 at RCPT and a bare 552 mean "mailbox full" (RFC 5321) unless the enhanced code says
    otherwise (4.5.3 too many recipients, 5.3.4 message too big)."""
    if detail is not None:
        return False
    return (code == 452 and stage is Stage.RCPT) or code == 552


def _address_by_text(stage: Stage, code: int, text: str) -> bool:
    if stage is Stage.RCPT and code in (551, 553):
        return True  # user not local / mailbox name not allowed
    return bool(_UNKNOWN_USER.search(text))
