"""Postfix's bounce(5) notices: "Undelivered Mail Returned to Sender".

The human-readable part names each failed recipient and quotes the remote server in full,
with the SMTP command it answered:

    <lead@example.org>: host mx.example.org[192.0.2.1] said: 550 5.1.1 <lead@example.org>:
        Recipient address rejected: User unknown (in reply to RCPT TO command)

The DSN part has the same answer, often shortened. The quoted answer replaces the DSN's
Diagnostic-Code when it contains it and carries a code; its status replaces a generic x.0.0.
"""

from __future__ import annotations

from replyguard.domain.inbound.bounce_codes import find_reply, find_status
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, between, find_command, first_address, sweep

_STARTS = (("The ", "Postfix "), ("The ", "mail system"), ("The ", "program"), ("This is the", "Postfix"),
           ("This is the", "mail system"))  # fmt: skip


def _starts(line: str) -> bool:
    return any(a in line and b in line[line.find(a) :] for a, b in _STARTS)


class _Prose:
    """The recipient, answer and commands written in the human-readable part."""

    def __init__(self) -> None:
        self.recipient: str | None = None
        self.diagnosis = ""
        self.commands: list[str] = []
        self.unavailable = False

    def feed(self, line: str) -> None:
        if "(in reply to " in line or "command)" in line:
            command = find_command(line)
            if command:
                self.commands.append(command)
            if self.diagnosis:
                self.diagnosis += " " + line
        elif line.startswith("<") and "@" in line and ">: " in line + " ":
            self.recipient = first_address(line[: line.find(">") + 1])
            self.diagnosis = line[line.find(">:") + 2 :]
        elif "(expanded from <" in line and "):" in line:
            self.recipient = first_address(between(line, "<", ">"))
            self.diagnosis = line[line.find(">):") + 3 :]
        elif "--- Delivery report unavailable ---" in line:
            self.unavailable = True
        elif self.diagnosis and line.startswith("    "):
            self.diagnosis += " " + line.strip()


def read(mail: Mail) -> list[Report]:
    if mail.subject.strip() != "Undelivered Mail Returned to Sender" or mail.header("x-aol-ip"):
        return []
    fields, prose, reading = DsnFields(), _Prose(), False
    for raw in mail.lines:
        line = raw.rstrip()
        if not reading:
            reading = _starts(line)
            continue
        if not fields.feed(line):
            prose.feed(line)
    reports = [r for r in fields.reports if r.recipient] or (
        [Report(recipient=prose.recipient)] if prose.recipient else []
    )
    for report in reports:
        _merge(report, prose)
    return reports


def _merge(report: Report, prose: _Prose) -> None:
    other = sweep(prose.diagnosis)
    report.diagnosis = sweep(report.diagnosis)
    if report.spec == "X-POSTFIX":
        report.spec = "SMTP"
    if other:
        if not report.diagnosis or report.diagnosis.isdigit():
            report.diagnosis = other
        else:
            found_status = find_status(other) if not report.status or report.status.endswith(".0.0") else None
            if found_status and not found_status.endswith(".0.0"):
                report.status = found_status
            found_reply = (
                find_reply(other) if not report.reply_code or report.reply_code.endswith("00") else None
            )
            if found_reply and not found_reply.endswith("00"):
                report.reply_code = found_reply
            if (found_status or found_reply) and report.diagnosis in other:
                report.diagnosis = other
    report.command = prose.commands[0] if prose.commands else find_command(report.diagnosis)
    if report.command is None and "refused to talk to me:" in report.diagnosis:
        report.command = "HELO"
    if report.spec is None and "host " in report.diagnosis and " said:" in report.diagnosis:
        report.spec = "SMTP"
