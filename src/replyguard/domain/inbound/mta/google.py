# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""Google's notices that are not RFC 3464 DSNs.

- Gmail's older plain-text notices (mailer-daemon@googlemail.com, "Delivery Status
  Notification"): the failed address indented on its own line, the remote server's answer, and
  a "(state N)" that names the stage of Gmail's SMTP client.
- Google Groups' refusal to take a post ("the group you tried to contact ... may not exist, or
  you may not have permission to post"): its four bullet points are the four reasons Google
  gives, none of them about our recipient's mailbox, so it is "rejected".
"""

from __future__ import annotations

from replyguard.domain.inbound.bounce_codes import find_status, status_name
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import Report, between, contains_any, first_address, sweep

_COPY = ("----- Original message -----", "----- Message header follows -----")
# Gmail's client states: the command it was sending and what a failure there means.
_STATES = {"6": ("MAIL", "failedstarttls"), "8": ("AUTH", "systemerror"), "9": ("AUTH", "failedstarttls"),
           "12": ("AUTH", "norelaying"), "13": ("HELO", "blocked"), "14": ("RCPT", "userunknown"),
           "15": ("DATA", "filtered"), "17": ("DATA", "filtered"), "18": ("DATA", "filtered")}  # fmt: skip
_MESSAGES = (
    ("expired", ("DNS Error: Could not contact DNS servers", "Delivery to the following recipient has been delayed",
                 "The recipient server did not accept our requests to connect")),
    ("hostunknown", ("DNS Error: Domain name not found", "DNS Error: DNS server returned answer with no data")),
)  # fmt: skip


def _from_google(mail: Mail) -> bool:
    return (
        "<mailer-daemon@googlemail.com>" in mail.header("from")
        and "Delivery Status Notification" in mail.subject
    )


def read_groups(mail: Mail) -> list[Report]:
    if not (
        _from_google(mail) and mail.header("x-failed-recipients") and mail.header("x-google-smtp-source")
    ):
        return []
    if "Google Groups" not in mail.notice:
        return []
    text = mail.notice.split("----- Original message -----", 1)[0]
    bullets = text.count("\n *") == 4 or text.count("\n*") == 4
    diagnosis = sweep(" ".join(text.split("\n\n")[:4]))
    recipients = [first_address(a) for a in mail.header("x-failed-recipients").split(",")]
    return [
        Report(recipient=r, diagnosis=diagnosis, reason="rejected" if bullets else "onhold")
        for r in recipients
        if r
    ]


def read_gmail(mail: Mail) -> list[Report]:
    if not _from_google(mail):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith(_COPY):
            break
        started = started or line.startswith("Delivery to the following recipient")
        if not started or not line:
            continue
        address = first_address(line) if line.startswith(" ") else None
        if address and address == line.strip():
            reports.append(Report(recipient=address))
        elif reports:
            reports[-1].diagnosis += line + " "
    for report in reports:
        _finish(report)
    return reports


def _finish(report: Report) -> None:
    report.diagnosis = sweep(report.diagnosis)
    state = _STATES.get(between(report.diagnosis, " (state ", ")"))
    if state:
        report.command, report.reason = state
    else:
        report.reason = next((r for r, phrases in _MESSAGES if contains_any(report.diagnosis, phrases)), None)
    if report.reason:
        status = find_status(report.diagnosis)
        if status:
            report.status = status
            if ".0" not in status:
                report.reason = status_name(status) or report.reason
