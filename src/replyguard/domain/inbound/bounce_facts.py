"""The facts of one failed recipient, normalised from what its bounce's format reported.

Contract: `facts_of(report)` returns `bounce_reasons.Facts` from a `mta.Report`; never raises.
- The status is the report's own, or the one written in its diagnostic when that says more
  (bounce_codes.prefer); a status is never read out of an IP address such as [198.5.1.1].
- The diagnostic loses the reply-code prefixes of multi-line SMTP answers ("550-5.7.1 ...
  550-5.7.1 ..."), any HTML, and its raw ISO-2022-JP escapes (Japanese servers); it is lower-
  cased with whitespace collapsed, at most 6,000 characters.
- The command is upper case and one of CONN, HELO (EHLO too), MAIL, RCPT, DATA, AUTH, STARTTLS.
- The remote host is the report's, or the host the diagnostic names ("host mx.example.org[...]
  said", "while talking to mx.example.org.").
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.bounce_codes import find_reply, find_status, prefer
from replyguard.domain.inbound.bounce_reasons import Facts
from replyguard.domain.inbound.mta.text import Report

_MAX_TEXT = 6000
_HTML = re.compile(r"<html>.*?</html>", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"\s+")
_HOST = re.compile(
    r"\bhost ([a-z0-9][\w-]*(?:\.[\w-]+)+)|while talking to ([a-z0-9][\w-]*(?:\.[\w-]+)+)", re.I
)
_COMMANDS = {"EHLO": "HELO", "HELO": "HELO", "MAIL": "MAIL", "RCPT": "RCPT", "DATA": "DATA", "CONN": "CONN",
             "AUTH": "AUTH", "STARTTLS": "STARTTLS"}  # fmt: skip


def _iso2022(text: str) -> str:
    """Japanese MTAs write diagnostics in raw ISO-2022-JP (7-bit escapes): decode them."""
    if "\x1b$" not in text:
        return text
    try:
        return text.encode("ascii", "ignore").decode("iso-2022-jp")
    except UnicodeDecodeError:
        return text


def _strip_continuations(diagnostic: str, reply: str, status: str) -> str:
    """ "550-5.7.1 a 550-5.7.1 b 550 5.7.1 c" -> "550 5.7.1 a b c" (sisimai does the same)."""
    for sep in ("-", " "):
        if status:
            diagnostic = diagnostic.replace(f"{reply}{sep}{status}", "")
        diagnostic = diagnostic.replace(f"{reply}{sep}", "")
    return f"{reply} {status} {diagnostic}" if reply in diagnostic else diagnostic


def facts_of(report: Report) -> Facts:
    """The normalised facts of one recipient; see the module docstring."""
    diagnostic = _iso2022(report.diagnosis[:_MAX_TEXT]).replace("\r", "")
    found = find_status(diagnostic) or ""
    if found.startswith("2.") and not report.status:
        found = ""  # "2.3.0" in prose is a version number more often than a success
    reply = find_reply(diagnostic, found) or ""
    status = prefer(report.status, found or None, reply or None)
    if reply and f"{reply}-" in diagnostic:
        diagnostic = _strip_continuations(diagnostic, reply, found)
    diagnostic = _SPACES.sub(" ", _HTML.sub(" ", diagnostic)).strip()
    host = report.rhost
    if not host:
        named = _HOST.search(diagnostic)
        host = (named.group(1) or named.group(2)).rstrip(".") if named else None
    recipient = report.recipient or ""
    return Facts(
        status=status,
        reply_code=report.reply_code or reply or None,
        action=report.action,
        command=_COMMANDS.get((report.command or "").upper()),
        diagnostic=diagnostic.lower(),
        hint=report.reason,
        spec=report.spec or ("X-UNIX" if report.reason == "mailererror" else None),
        rhost=host.lower() if host else None,
        domain=recipient.rsplit("@", 1)[1].lower() if "@" in recipient else None,
    )
