"""Sendmail's notices: "Returned mail: see transcript for details", "Warning: could not send";
and those of Sendmail version 5, which had no DSN part.

After "----- Transcript of session follows -----" Sendmail writes the SMTP session: ">>> RCPT
To:<...>" for what it sent, "<<< 550 ..." for what the remote server answered, then its own
summary ("550 5.1.1 <lead@example.org>... User unknown"). The answers lead the diagnostic;
the last command sent before them is the stage. Answers with no command before them were
the server's greeting: the connection itself was refused.
"""

from __future__ import annotations

from replyguard.domain.inbound.bounce_codes import find_reply, find_status
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, find_command, first_address, sweep

_TRANSCRIPT = "   ----- Transcript of session follows -----"


class _Session:
    def __init__(self) -> None:
        self.command: str | None = None
        self.replies: list[str] = []
        self.talking = False
        self.diagnosis = ""
        self.status: str | None = None

    def feed(self, line: str) -> None:
        if line.startswith(">>> "):
            self.command = self.command or find_command(line)
        elif line.startswith("<<< "):
            if line[4:] not in self.replies:
                self.replies.append(line[4:])
        elif self.talking or line.startswith(" "):
            return
        elif line.startswith("... while talking to "):
            self.talking = True
        elif line.startswith("<") and "@" in line and ">." in line and " " in line:
            self.diagnosis = line.split(" ", 1)[1]
        else:
            reply, status = find_reply(line), find_status(line)
            if reply and status:
                self.status = status
                self.diagnosis += " " + line
            elif line.startswith(("Message: ", "Warning: ")):
                self.diagnosis += " " + line


def read(mail: Mail) -> list[Report]:
    subject = mail.subject.strip()
    if mail.header("x-aol-ip") or not (
        subject.startswith("Warning: ") or subject.endswith("see transcript for details")
    ):
        return []
    fields, session, reading = DsnFields(), _Session(), False
    for raw in mail.lines:
        line = raw.rstrip()
        if not reading:
            reading = line.startswith(_TRANSCRIPT)
            continue
        if line and not fields.feed(line):
            session.feed(line)
    reports = [r for r in fields.reports if r.recipient]
    for report in reports:
        _merge(report, session, single=len(reports) == 1)
    return reports


def _merge(report: Report, session: _Session, single: bool) -> None:
    other = sweep(session.diagnosis)
    if other and (not report.diagnosis.strip() or report.diagnosis.strip().isdigit()):
        report.diagnosis = other
    if session.replies and single:
        report.diagnosis = " ".join(session.replies) + " " + report.diagnosis
    report.diagnosis = sweep(report.diagnosis)
    report.command = (
        session.command or find_command(report.diagnosis) or ("HELO" if session.replies else None)
    )
    if session.status and not report.status:
        report.status = session.status
    if report.recipient and report.recipient.startswith("@"):
        report.recipient = first_address(report.diagnosis) or report.recipient


_V5_COPY = ("   ----- Unsent message follows -----", "  ----- No message was collected -----")


class _V5Session:
    """Sendmail 5's transcript: each "<address>..." line after "While talking to" opens a report."""

    def __init__(self) -> None:
        self.reports: list[Report] = []
        self.before: list[str] = []  # lines before the first "While talking to"
        self.host: str | None = None
        self.command: str | None = None

    def feed(self, line: str) -> None:
        if line.startswith(">>> "):
            self.command = find_command(line[4:])
        if (" <" in line and "@" in line and ">..." in line) or ">>> RCPT TO:" in line.upper():
            self._address(line)
        elif "While talking to " in line:
            self.host = line.split("While talking to ", 1)[1].strip(" :") or None
        elif line.startswith((">>> ", "<<< ")) and self.reports:
            self.reports[-1].diagnosis += " " + line
        else:
            self.before.append(line)

    def _address(self, line: str) -> None:
        address = first_address(line)
        last = self.reports[-1] if self.reports else None
        if self.host is None:
            self.before.append(line)
        elif last and (address == last.recipient or (self.command == "MAIL" and line.startswith("<<< "))):
            last.diagnosis += " " + line
            self.command = None
        else:
            self.reports.append(
                Report(recipient=address, diagnosis=line, rhost=self.host, command=self.command)
            )


def read_v5(mail: Mail) -> list[Report]:
    """Sendmail 5: "While talking to <host>:", the transcript, "550 <lead@...>... User unknown"."""
    if not mail.subject.startswith("Returned mail: ") or not any(c in mail.notice for c in _V5_COPY):
        return []
    session = _V5Session()
    started = False
    for raw in mail.notice.split("\n"):
        line = raw.rstrip()
        if line.startswith(_V5_COPY):
            break
        if "----- Transcript of session follows -----" in line:
            started = True
        elif started and line:
            session.feed(line)
    reports = session.reports
    if not reports and session.before:
        text = " ".join(session.before)
        reports = [Report(recipient=first_address(text), diagnosis=text)]
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.command = report.command or find_command(report.diagnosis)
        report.reply_code = find_reply(report.diagnosis)
    return [r for r in reports if r.recipient]
