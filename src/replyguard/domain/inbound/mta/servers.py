"""Commercial servers and appliances with formats of their own: Ipswitch IMail, McAfee's
e-mail appliance, Oracle Messaging Server, and an unnamed MTA ("Delivery status notification"
from "Mail Delivery System" with "SMTP:RCPT host ..." lines).
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.bounce_codes import find_reply, find_status
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import (
    DsnFields,
    Report,
    between,
    contains_any,
    find_command,
    first_address,
    sweep,
)

_IMAIL = (
    ("hostunknown", ("Unknown host",)),
    ("userunknown", ("Unknown user", "Invalid final delivery userid")),
    ("mailboxfull", ("User mailbox exceeds allowed size",)),
    ("virusdetected", ("Requested action not taken: virus detected",)),
    ("spamdetected", ("Blacklisted URL in message",)),
    ("expired", ("Delivery failed ",)),
)


def _first(text: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    return next((reason for reason, phrases in table if contains_any(text, phrases)), None)


def read_imail(mail: Mail) -> list[Report]:
    if not (
        mail.subject.startswith("Undeliverable Mail ") or mail.header("x-mailer").startswith("<SMTP32 v")
    ):
        return []
    reports: list[Report] = []
    response = ""
    for raw in mail.notice.split("Original message follows.", 1)[0].split("\n"):
        line = raw.rstrip()
        if (line.find(": ") > 8 and "@" in line[line.find(": ") :]) or line.startswith("undeliverable "):
            reports.append(Report(recipient=first_address(line), diagnosis=line))
        elif "Body of message generated response:" in line:
            response += line
        elif response:
            response += " " + line
    for report in reports:
        report.diagnosis = sweep(f"{response} {report.diagnosis}")
        report.command = find_command(report.diagnosis)
        report.reason = _first(report.diagnosis, _IMAIL)
    return [r for r in reports if r.recipient]


_MCAFEE_UNKNOWN = re.compile(
    r" User \(.+@.+\) unknown\. |550 Unknown user [^ ]+@[^ ]+|550 <.+?@.+?>\.+ User not exist|No such user"
)
_MCAFEE_LINE = re.compile(r"^<([^ ]+@[^ ]+)>[ \t]+\((.+)\)$")


def read_mcafee(mail: Mail) -> list[Report]:
    if "Modified by McAfee" not in mail.header("x-nai-header") or mail.subject != "Delivery Status":
        return []
    reports: list[Report] = []
    fields = DsnFields()
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or "--- The following addresses had delivery problems ---" in line
        if not started or not line:
            continue
        found = _MCAFEE_LINE.match(line)
        if found:
            reports.append(Report(recipient=found.group(1), comment=found.group(2)))
        else:
            fields.feed(line)
    for i, report in enumerate(reports):
        dsn = fields.reports[i] if i < len(fields.reports) else Report()
        report.diagnosis = sweep(dsn.diagnosis or report.comment)
        report.status, report.action, report.rhost = dsn.status, dsn.action, dsn.rhost
        report.reason = "userunknown" if _MCAFEE_UNKNOWN.search(report.diagnosis) else None
    return reports


def read_unnamed_x3(mail: Mail) -> list[Report]:
    if not (
        mail.header("from").startswith("Mail Delivery System")
        and mail.subject.startswith("Delivery status notification")
    ):
        return []
    reports: list[Report] = []
    fields = DsnFields()
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or line.startswith(
            "      This is an automatically generated Delivery Status Notification."
        )
        if not started or not line:
            continue
        if "  * " in line and "@" in line:
            reports.append(Report(recipient=first_address(line)))
        elif reports and line.startswith("SMTP:"):
            reports[-1].command, reports[-1].spec = find_command(line[4:10]), "SMTP"
            reports[-1].diagnosis += " " + line
        elif reports and line.startswith("Routing: "):
            reports[-1].diagnosis += " " + line
        else:
            fields.feed(line)
    for i, report in enumerate(reports):
        if i < len(fields.reports):
            report.status = fields.reports[i].status
            report.diagnosis += " " + fields.reports[i].diagnosis
        report.diagnosis = sweep(report.diagnosis)
    return reports


def read_messaging_server(mail: Mail) -> list[Report]:
    """Oracle (formerly Sun) Messaging Server: "Recipient address:", "Reason:", "Diagnostic code:"."""
    if "Boundary_(ID_" not in mail.header("content-type") and not mail.subject.startswith(
        "Delivery Notification: "
    ):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or line.startswith(
            "This report relates to a message you sent with the following header fields:"
        )
        if not started or not line:
            continue
        if line.startswith(("  Recipient address: ", "  Original address: ")) and "@" in line:
            address = first_address(line.split(": ", 1)[1])
            if address and (not reports or reports[-1].recipient != address):
                reports.append(Report(recipient=address))
        elif reports and line.startswith("  Diagnostic code: "):
            spec, _, text = line.split(": ", 1)[1].partition(";")
            reports[-1].spec = spec.strip().upper()
            reports[-1].diagnosis += " " + text
            reports[-1].reply_code = find_reply(text)
            reports[-1].status = find_status(text, reports[-1].reply_code or "")
        elif reports and line.startswith("  Remote system: "):
            reports[-1].rhost = line.split(";", 1)[-1].split(" (", 1)[0].strip() or None
        elif reports and line.startswith("Status: "):
            reports[-1].status = reports[-1].status or find_status(line)
            reports[-1].diagnosis = reports[-1].diagnosis or between(line, "(", ")")
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.reason = "hostunknown" if "Illegal host/domain name found" in report.diagnosis else None
    return reports
