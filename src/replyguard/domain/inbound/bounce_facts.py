"""The facts of one failed recipient, read out of a DSN's fields or a bounce's prose.

Contract: `facts_of(status, action, diagnostic, notice)` returns `bounce_reasons.Facts`: a status
code only when it is a real one (never the digits of an IP address such as [198.5.1.1]), a more
specific status from the diagnostic when the DSN gives only a generic x.0.0, the SMTP reply code,
the SMTP command the failure answered, and the lower-cased diagnostic text (the recipient's own
Diagnostic-Code when there is one, else the notice's prose). Never raises.
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.bounce_reasons import Facts

# A status code stands alone: no digit or dot before it, no ".digit" after it. Read out of prose,
# only failures (4.x.x, 5.x.x) count: "2.3.0" in a notice is a version number more often than not.
STATUS = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)")
_FAILURE_STATUS = re.compile(r"(?<![\d.])([45])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)")
_REPLY = re.compile(r"(?<![\d.\w])([245][0-5]\d)(?:[ -]|$)", re.MULTILINE)
_COMMAND = re.compile(
    r"in reply to (?:the )?(rcpt to|mail from|end of data|data|helo|ehlo|rcpt|mail)\b|"
    r"after (rcpt to|mail from|end of data|data|initial connection|helo|ehlo)\b|"
    r">>> (rcpt to|mail from|data|helo|ehlo)\b|"
    r"\b(rcpt to|mail from|helo|ehlo)(?: command)? (?:failed|rejected|error)",
    re.IGNORECASE,
)
_COMMANDS = {"rcpt to": "RCPT", "rcpt": "RCPT", "mail from": "MAIL", "mail": "MAIL", "data": "DATA",
             "end of data": "DATA", "helo": "HELO", "ehlo": "HELO", "initial connection": "CONN"}  # fmt: skip
_MAX_TEXT = 6000


def _iso2022(text: str) -> str:
    """Japanese MTAs write Diagnostic-Code in raw ISO-2022-JP (7-bit escapes): decode it."""
    if "\x1b$" not in text:
        return text
    try:
        return text.encode("ascii", "ignore").decode("iso-2022-jp")
    except UnicodeDecodeError:
        return text


def find_status(text: str) -> str | None:
    """The first failure status code (4.x.x or 5.x.x) in prose, or None."""
    found = _FAILURE_STATUS.search(text)
    return ".".join(found.groups()) if found else None


def _specific(status: str | None, diagnostic: str, notice: str) -> str | None:
    """The DSN's status, or a more specific one of the same class from the diagnostic: many
    MTAs write `Status: 5.0.0` with `550 5.1.1 user unknown` in the Diagnostic-Code."""
    if status and not status.endswith(".0.0"):
        return status
    for text in (diagnostic, notice):
        found = find_status(text)
        if found and not found.endswith(".0.0") and (status is None or found[0] == status[0]):
            return found
    return status


def _command(*texts: str) -> str | None:
    """The SMTP command the failure answered: the first text that names one; in a transcript
    that names several (MAIL, RCPT, DATA), RCPT, where a recipient is refused."""
    for text in texts:
        found = [_COMMANDS.get(next(g for g in m.groups() if g).lower()) for m in _COMMAND.finditer(text)]
        if found:
            return "RCPT" if "RCPT" in found else found[0]
    return None


def facts_of(status: str | None, action: str | None, diagnostic: str, notice: str) -> Facts:
    """The normalised facts of one recipient; see the module docstring."""
    diagnostic = _iso2022(diagnostic[:_MAX_TEXT])
    notice = notice[:_MAX_TEXT]
    text = re.sub(r"^\s*(?:smtp|x-[\w-]+)\s*;\s*", "", diagnostic, flags=re.IGNORECASE) or notice
    reply = _REPLY.search(text)
    return Facts(
        status=_specific(status, diagnostic, notice),
        reply_code=reply.group(1) if reply else None,
        action=action,
        command=_command(diagnostic, notice),
        diagnostic=" ".join(text.split()).lower(),
    )
