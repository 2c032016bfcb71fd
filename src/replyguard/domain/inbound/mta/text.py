"""Small text helpers the per-MTA readers share: whitespace, SMTP commands, addresses and the
fields of RFC 3464 delivery status notifications.

Contract: every function is pure and never raises; inputs are already bounded by the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The SMTP commands a diagnostic may name, in the order of a session; the last one named wins
# ("MAIL FROM ... RCPT TO ... DATA" failed at DATA). A command glued to a word, an address or
# a domain ("DATABASE@EXAMPLE", "EMAIL.EXAMPLE") is not one.
_COMMANDS = (
    ("HELO", re.compile(r"(?<![0-9@-Z`-z])HELO(?![0-9@-Z`-z])")),
    ("EHLO", re.compile(r"(?<![0-9@-Z`-z])EHLO(?![0-9@-Z`-z])")),
    ("STARTTLS", re.compile(r"(?<![0-9@-Z`-z])STARTTLS(?![0-9@-Z`-z])")),
    ("AUTH", re.compile(r"AUTH (?:PLAIN|LOGIN|CRAM-|DIGEST-)")),
    ("MAIL", re.compile(r"MAIL F")),
    ("RCPT", re.compile(r"(?<![0-9@-Z`-z])RCPT(?![0-9@-Z`-z])|RCPT T")),
    ("DATA", re.compile(r"(?<![0-9@-Z`-z])DATA(?![0-9@-Z`-z])")),
    ("QUIT", re.compile(r"(?<![0-9@-Z`-z])QUIT(?![0-9@-Z`-z])")),
    ("XFORWARD", re.compile(r"(?<![0-9@-Z`-z])XFORWARD(?![0-9@-Z`-z])")),
)
_ADDRESS = re.compile(r"[\w.+'=/!#$%&*?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")
_FIELD = re.compile(
    r"^(final-recipient|original-recipient|x-actual-recipient|action|status|remote-mta|reporting-mta|"
    r"diagnostic-code|received-from-mta|arrival-date|last-attempt-date|x-postfix-sender)\s*:\s*(.*)$",
    re.IGNORECASE,
)
_PER_MESSAGE = frozenset({"reporting-mta", "received-from-mta", "arrival-date"})


def sweep(text: str) -> str:
    """Whitespace collapsed to single spaces, ends trimmed."""
    return " ".join(text.split())


def contains_any(text: str, phrases: tuple[str, ...]) -> bool:
    """Whether any of `phrases` occurs in `text` (case as given)."""
    return any(p in text for p in phrases)


_ANY_COMMAND = re.compile(r"HELO|EHLO|STARTTLS|AUTH |MAIL F|RCPT|DATA|QUIT|XFORWARD")


def find_command(text: str) -> str | None:
    """The SMTP command a diagnostic names (upper case, as servers write them), or None."""
    if not _ANY_COMMAND.search(text):
        return None  # most diagnostics name none: one scan instead of nine
    found = None
    for name, pattern in _COMMANDS:
        if pattern.search(text):
            found = name
    return found


def first_address(text: str) -> str | None:
    """The first e-mail address written in `text`, or None."""
    match = _ADDRESS.search(text)
    return match.group(0).strip(".") if match else None


def between(text: str, start: str, end: str) -> str:
    """The text between the first `start` and the next `end` ('' when either is missing)."""
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i + len(start))
    return text[i + len(start) : j] if j >= 0 else ""


@dataclass(slots=True)
class Report:
    """One failed recipient as the reporting server's format tells it (sisimai's fields)."""

    recipient: str | None = None
    diagnosis: str = ""
    command: str | None = None
    status: str | None = None
    reply_code: str | None = None
    reason: str | None = None  # the reason the format itself names, if any
    spec: str | None = None  # the diagnostic type (SMTP, X-UNIX, ...)
    action: str | None = None
    rhost: str | None = None
    alias: str | None = None
    comment: str = ""  # a comment after the Status field ("5.0.0 (permanent failure)")


@dataclass(slots=True)
class DsnFields:
    """RFC 3464 fields read line by line: per-recipient reports and per-message defaults."""

    reports: list[Report] = field(default_factory=list)
    per_message: dict[str, str] = field(default_factory=dict)
    last: str = ""  # the name of the last field read, for continuation lines

    def feed(self, line: str) -> bool:
        """Read one line; True when it was a field (or a continuation of Diagnostic-Code)."""
        if line[:1] in (" ", "\t") and self.last == "diagnostic-code" and self.reports:
            self.reports[-1].diagnosis += " " + line.strip()
            return True
        match = _FIELD.match(line) if ":" in line[:40] else None
        if not match:
            self.last = ""
            return False
        name, value = match.group(1).lower(), match.group(2).strip()
        self.last = name
        if name in _PER_MESSAGE:
            self.per_message[name] = value
        elif name == "final-recipient":
            self._final(value)
        else:
            self._set(name, value)
        return True

    def _final(self, value: str) -> None:
        raw = value.split(";", 1)[-1].strip()
        # "@mx.example.org" (Sendmail, no local part): kept for the reader to complete.
        address = first_address(raw) or (raw.strip("<>") if "@" in raw else None)
        if self.reports and self.reports[-1].recipient is None:
            self.reports[-1].recipient = address
        elif not (self.reports and address and self.reports[-1].recipient == address):
            self.reports.append(Report(recipient=address))

    def _set(self, name: str, value: str) -> None:
        if not self.reports:
            self.reports.append(Report())
        report = self.reports[-1]
        if name == "original-recipient" and report.recipient is None:
            report.recipient = first_address(value.split(";", 1)[-1])
        elif name == "x-actual-recipient":
            report.alias = first_address(value.split(";", 1)[-1])
        elif name == "action":
            report.action = _action(value)
        elif name == "status":
            code, _, comment = value.partition(" ")
            report.status, report.comment = code.strip() or None, comment.strip("() ")
        elif name == "remote-mta":
            report.rhost = value.split(";", 1)[-1].strip().split(" ")[0].strip("[]") or None
        elif name == "diagnostic-code":
            spec, sep, text = value.partition(";")
            report.spec = spec.strip().upper() if sep else None
            report.diagnosis = (text if sep else value).strip()


def _action(value: str) -> str:
    action = value.strip().lower().split(" ")[0]
    if action.startswith("fail"):
        return "failed"
    return "delayed" if action.startswith("delay") else action
