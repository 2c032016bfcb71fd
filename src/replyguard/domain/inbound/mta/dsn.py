# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""RFC 3464 delivery status notifications from any server: the generic reader, tried last.

Each recipient's diagnostic is its Diagnostic-Code with the comment of its Status field. With
one recipient, the human-readable text before the status fields is part of the diagnostic as
well (many servers write the remote server's answer only there): it replaces the
Diagnostic-Code when it already contains it, and is put in front of it otherwise.
"""

from __future__ import annotations

from replyguard.domain.inbound.bounce_codes import find_reply, find_status
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, find_command, sweep

_MAX_LEAD = 4_000
# PowerMTA's own field (https://bird.com/email/power-mta): "X-PowerMTA-BounceCategory: bad-mailbox".
_POWERMTA = {"bad-domain": "hostunknown", "bad-mailbox": "userunknown", "message-expired": "expired",
             "no-answer-from-host": "networkerror", "policy-related": "policyviolation", "quota-issues": "mailboxfull",
             "routing-errors": "systemerror", "spam-related": "spamdetected"}  # fmt: skip
# Lines of the human-readable part that are MIME furniture, not words of the notice.
_FURNITURE = ("Content-", "This is a MIME", "This is a multi", "This is an auto", "This multi-part",
              "###", "***", "--")  # fmt: skip


def _lead(lines: list[str]) -> str:
    kept = [
        line.strip() for line in lines
        if line.strip() and not line.startswith(_FURNITURE)
        and "--- The follow" not in line and "--- Transcript" not in line
    ]  # fmt: skip
    return sweep(" ".join(kept))[:_MAX_LEAD]


def read(mail: Mail) -> list[Report]:
    fields = DsnFields()
    lead: list[str] = []
    started = False
    for line in mail.lines:
        if fields.feed(line.rstrip()):
            started = True
        elif not started:
            lead.append(line)
        elif line.lower().startswith("x-powermta-bouncecategory:") and fields.reports:
            fields.reports[-1].reason = _POWERMTA.get(line.split(":", 1)[1].strip())
    reports = [r for r in fields.reports if r.recipient]
    if not reports:
        return []
    before = _lead(lead)
    for report in reports:
        report.diagnosis = sweep(f"{report.diagnosis} {report.comment}")
        if len(reports) == 1 and before:
            if report.diagnosis.lower() in before.lower():
                report.diagnosis = before
            else:
                report.diagnosis = sweep(f"{before} {report.diagnosis}")
        report.command = find_command(report.diagnosis) or find_command(before)
        report.reply_code = find_reply(report.diagnosis, report.status or "") or find_reply(before)
        report.status = report.status or find_status(report.diagnosis, report.reply_code or "")
    return reports
