# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""Open-source MTAs with notices of their own: OpenSMTPD, Courier and the DragonFly Mail Agent.

- OpenSMTPD (bounce.c): "This is the MAILER-DAEMON, please DO NOT REPLY to this e-mail." then
  one line per recipient, "lead@example.org: 550 5.1.1 ... User unknown"; its own failures are
  fixed strings of mta.c and queue.c ("Envelope expired", "Domain does not exist").
- Courier (courierdsn): "UNDELIVERABLE MAIL", an SMTP transcript (">>> RCPT TO:"), a DSN part;
  its own failures come from esmtpclient.c ("No such domain.").
- DragonFly Mail Agent (dma): "There was an error delivering your mail to <...>.", "... did not
  like our RCPT TO:".
"""

from __future__ import annotations

from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import (
    DsnFields,
    Report,
    contains_any,
    find_command,
    first_address,
    sweep,
)

_OPENSMTPD = (
    ("expired", ("Envelope expired",)),
    ("securityerror", ("Could not retrieve credentials",)),
    ("hostunknown", ("Invalid domain name", "Domain does not exist")),
    ("networkerror", ("Address family mismatch on destination MXs", "All routes to destination blocked",
                      "bad DNS lookup error code", "Could not retrieve source address", "Loop detected",
                      "Network error on destination MXs", "No valid route to remote MX", "No valid route to destination",
                      "Temporary failure in MX lookup")),
    ("notaccept", ("Destination seem to reject all mails", "No MX found for domain", "No MX found for destination")),
)  # fmt: skip
_COURIER = (
    ("hostunknown", ("No such domain.",)),
    ("systemerror", ("This domain's DNS violates RFC 1035.",)),
    ("networkerror", ("DNS lookup failed.",)),
)


def _first(text: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    return next((reason for reason, phrases in table if contains_any(text, phrases)), None)


def read_opensmtpd(mail: Mail) -> list[Report]:
    marks = ("Delivery status notification" in mail.subject) + ("Mailer Daemon <" in mail.header("from"))
    marks += any(" (OpenSMTPD) with " in r for r in mail.headers("received"))
    if not marks:
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.notice.split("    Below is a copy of the original message:", 1)[0].split("\n"):
        line = raw.rstrip()
        started = started or line.startswith("    This is the MAILER-DAEMON, please DO NOT REPLY to this")
        if started and "@" in line and " " in line[line.find("@") :] and not line.startswith(" "):
            address, _, diagnosis = line.partition(": ")
            reports.append(Report(recipient=first_address(address), diagnosis=sweep(diagnosis)))
    for report in reports:
        report.reason = _first(report.diagnosis, _OPENSMTPD)
    return [r for r in reports if r.recipient]


def read_courier(mail: Mail) -> list[Report]:
    marks = ("Courier mail server at " in mail.header("from") or "NOTICE: mail delivery status." in mail.subject
             or "WARNING: delayed mail." in mail.subject or mail.header("message-id").startswith("<courier."))  # fmt: skip
    if not marks:
        return []
    fields = DsnFields()
    command = None
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or "DELAYS IN DELIVERING YOUR MESSAGE" in line or "UNDELIVERABLE MAIL" in line
        if not started or not line:
            continue
        if not fields.feed(line) and line.startswith(">>> "):
            command = find_command(line)
    reports = [r for r in fields.reports if r.recipient]
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.command = command
        report.reason = _first(report.diagnosis, _COURIER)
    return reports


def read_dragonfly(mail: Mail) -> list[Report]:
    if "Mail delivery failed" not in mail.subject:
        return []
    if not any(" (DragonFly Mail Agent" in r for r in mail.headers("received")):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith(("Original message follows.", "Message headers follow")):
            break
        started = started or line.startswith("This is the DragonFly Mail Agent ")
        if not started or not line or line.startswith("This is the DragonFly"):
            continue
        if line.startswith("There was an error delivering your mail to <"):
            reports.append(Report(recipient=first_address(line)))
        elif reports:
            reports[-1].diagnosis += line
            if " did not like our " in line and reports[-1].command is None:
                reports[-1].command = find_command(line)
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        if "Could not deliver for the last " in report.diagnosis:
            report.reason = "expired"
        elif "DNS lookup failure: host " in report.diagnosis:
            report.reason = "hostunknown"
    return reports
