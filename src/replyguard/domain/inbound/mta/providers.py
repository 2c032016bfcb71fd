"""Mail providers with notices of their own: Zoho Mail, GMX, and Amazon SES's receiving side.

- Zoho (X-ZohoMail): "<address> Invalid Address, ERROR_CODE :550, ERROR_CODE :5.1.1 ...".
- GMX (X-GMX-Antispam): Exim-like text, '"lead@example.org":', "SMTP error from remote server
  after RCPT command:", "host: mx.example.org", then the answer.
- Amazon SES receiving rules (X-SES-Outgoing): a bounce action of a receiving rule set, written
  from the rule's template ("Mailbox does not exist", "Mailbox full", ...). A template says what
  its owner chose to answer, not what the mailbox is: "Mailbox does not exist" there is a filter.
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.bounce_codes import find_status, status_name
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, find_command, first_address, sweep

_ZOHO_ADDRESS = re.compile(r"@.* .*ERROR_CODE :")


def read_zoho(mail: Mail) -> list[Report]:
    if not mail.header("x-zohomail"):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.notice.split("\n\nReceived:", 1)[0].split("\n"):
        line = raw.rstrip()
        if not started:
            started = line.startswith("This message was created automatically by mail delivery")
            continue
        if not line:
            continue
        if _ZOHO_ADDRESS.search(line) or line.startswith("[Status: "):
            reports.append(Report(recipient=first_address(line), diagnosis=line))
        elif reports and not line.startswith("-----"):
            reports[-1].diagnosis += " " + line
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.reason = "expired" if "Host not reachable" in report.diagnosis else None
    return [r for r in reports if r.recipient]


def read_gmx(mail: Mail) -> list[Report]:
    if not mail.header("x-gmx-antispam"):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.notice.split("--- The header of the original message is following. ---", 1)[0].split(
        "\n"
    ):
        line = raw.rstrip()
        if not started:
            started = line.startswith("This message was created automatically by mail delivery software")
            continue
        if not line:
            continue
        if line.find("@") > 1 and line.startswith(('"', "<")):
            reports.append(Report(recipient=first_address(line)))
        elif reports and line.startswith("SMTP error "):
            reports[-1].command = find_command(line)
        elif reports and line.startswith("host: "):
            reports[-1].rhost = line[6:].strip()
        elif reports:
            reports[-1].diagnosis += line + " "
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.reason = "expired" if "delivery retry timeout exceeded" in report.diagnosis else None
    return [r for r in reports if r.recipient]


_SES_TEMPLATES = (("filtered", "Mailbox does not exist"), ("mesgtoobig", "Message too large"),
                  ("mailboxfull", "Mailbox full"), ("contenterror", "Message content rejected"))  # fmt: skip
_QUOTED_STATUS = re.compile(r"[\"'](\d\.\d\.\d.+)['\"]")


def read_ses_receiving(mail: Mail) -> list[Report]:
    if not mail.header("x-ses-outgoing"):
        return []
    fields = DsnFields()
    for line in mail.dsn.split("\n"):
        fields.feed(line.rstrip())
    reports = [r for r in fields.reports if r.recipient]
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        if report.status and re.fullmatch(r"[45]\.[01]\.0", report.status):
            quoted = _QUOTED_STATUS.search(report.diagnosis)
            report.status = find_status(quoted.group(1) if quoted else report.diagnosis) or report.status
        template = next((r for r, phrase in _SES_TEMPLATES if phrase in report.diagnosis), None)
        report.reason = template or status_name(report.status) or None
    return reports
