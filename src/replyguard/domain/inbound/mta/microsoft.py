# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""Microsoft's notices: Exchange 2000/2003 ("MSEXCH:" codes) and Exchange Online / Office 365.

Exchange 2003 writes each recipient as "lead@example.org on <date>" and its own error code in
parentheses ("MSEXCH:IMS:... (000C05A6) Unknown Recipient"). Office 365 writes a human page
("Delivery has failed to these recipients or groups:", "Diagnostic information for
administrators:") and an enhanced status from Microsoft's documented list ("5.1.10
RecipientNotFound", "5.7.1 delivery not authorized", "5.7.50x" spam filtering). The status
table is also used when the refusing host is one of Microsoft's (bounce_hosts.py).
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.bounce_codes import find_status
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, between, first_address, sweep

# Exchange 2003's codes (https://learn.microsoft.com/, "NDR codes in Exchange 2000/2003").
_MSEXCH = {"000C05A6": "userunknown", "000C0595": "filtered", "00010256": "systemerror", "000D06B5": "systemerror",
           "00120270": "networkerror", "00050311": "contenterror", "000502CC": "contenterror",
           "000B0981": "securityerror", "000B099C": "onhold", "000B09AA": "onhold", "000B09B6": "onhold"}  # fmt: skip
_EXCHANGE_MARKS = ("Internet Mail Service (", "Microsoft Exchange Server Internet Mail Connector")


def _is_exchange2003(mail: Mail) -> bool:
    if mail.header("x-ms-embedded-report"):
        return True
    if mail.header("x-mailer").startswith(_EXCHANGE_MARKS) or mail.header("x-mimeole").startswith(
        "Produced By Microsoft Exchange"
    ):
        return True
    return any(" with Internet Mail Service (" in r for r in mail.headers("received"))


def read_exchange2003(mail: Mail) -> list[Report]:
    if not _is_exchange2003(mail):
        return []
    reports: list[Report] = []
    other: list[str] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or line.startswith("Your message")
        if not started or not line or line.startswith("Content-Type: message/rfc822"):
            continue
        if "@" in line and " on " in line[line.find("@") :]:
            address = between(line.lower(), ":smtp=", "; on ") or line.split(" on ", 1)[0].strip()
            reports.append(Report(recipient=first_address(address)))
            other.append("")
        elif reports and line.startswith(" ") and "MSEXCH:" in line:
            reports[-1].diagnosis += line.strip()
        elif reports and not reports[-1].diagnosis.startswith("MSEXCH:"):
            other[-1] += " " + line
    for report, extra in zip(reports, other, strict=True):
        diagnosis = sweep(report.diagnosis)
        code = between(diagnosis, "(", ")")
        if diagnosis.startswith("MSEXCH:") and code:
            report.reason = _MSEXCH.get(code)
            report.diagnosis = diagnosis.split(") ", 1)[-1]
        if not report.reason and extra:
            report.diagnosis = sweep(f"{extra} {report.diagnosis}")
    return [r for r in reports if r.recipient]


# Exchange Online's enhanced status codes ("Email non-delivery reports and SMTP errors in
# Exchange Online", Microsoft Learn): (pattern, reason).
_ONLINE = tuple((re.compile(p), r) for p, r in (
    (r"4\.4\.7$", "expired"), (r"4\.4\.312$", "networkerror"), (r"4\.4\.316$", "expired"), (r"4\.7\.26$", "authfailure"),
    (r"4\.7\.[56]\d\d$", "blocked"), (r"4\.7\.8[5-9]\d$", "blocked"), (r"5\.0\.350$", "contenterror"),
    (r"5\.1\.10$", "userunknown"), (r"5\.4\.1$", "norelaying"), (r"5\.4\.6$", "networkerror"),
    (r"5\.4\.312$", "networkerror"), (r"5\.4\.316$", "expired"), (r"5\.6\.11$", "contenterror"), (r"5\.7\.1$", "rejected"),
    (r"5\.7\.1[23]$", "rejected"), (r"5\.7\.124$", "rejected"), (r"5\.7\.13[3-6]$", "rejected"), (r"5\.7\.23$", "blocked"),
    (r"5\.7\.25$", "networkerror"), (r"5\.7\.50[1-3]$", "spamdetected"), (r"5\.7\.50[45]$", "filtered"),
    (r"5\.7\.50[67]$", "blocked"), (r"5\.7\.508$", "toomanyconn"), (r"5\.7\.509$", "authfailure"),
    (r"5\.7\.510$", "notaccept"), (r"5\.7\.511$", "rejected"), (r"5\.7\.512$", "policyviolation"),
    (r"5\.7\.57$", "securityerror"), (r"5\.7\.60[6-9]$", "blocked"), (r"5\.7\.6[1-4]\d$", "blocked"),
    (r"5\.7\.7[0-4]\d$", "toomanyconn"),
))  # fmt: skip


def online_reason(status: str | None) -> str | None:
    """What an Exchange Online status code means, or None."""
    return next((reason for pattern, reason in _ONLINE if status and pattern.match(status)), None)


_OUTLOOK_HOST = re.compile(r"\.(?:outbound\.protection|prod)\.outlook\.com\b")
_O365_HEADERS = ("x-ms-exchange-message-is-ndr", "x-microsoft-antispam-prvs", "x-exchange-antispam-report-test",
                 "x-exchange-antispam-report-cfa-test", "x-ms-exchange-crosstenant-originalarrivaltime",
                 "x-ms-exchange-crosstenant-fromentityheader", "x-ms-exchange-transport-crosstenantheadersstamped")  # fmt: skip
_O365_STARTS = re.compile(
    r"^(?:Delivery has failed to these recipients or groups:|Original Message Details|.+ rejected your message to the "
    r"following e-?mail addresses:|Falha na entrega a estes destinat.+rios ou grupos:|Uw bericht kan niet worden bezorgd "
    r"bij de volgende geadresseerden of groepen:)"
)
_O365_ERROR = re.compile(r"^(?:Diagnostic information for administrators:|Error Details|Diagnostische gegevens voor "
                         r"beheerders:|Informa.+es de diagn.+stico para administradores:)")  # fmt: skip
_O365_END = re.compile(r"^(?:Original [Mm]essage [Hh]eaders:?|Message Hops|Cabe.+alhos originais da mensagem:|"
                       r"Oorspronkelijke berichtkoppen:)")  # fmt: skip
_O365_RECIPIENT = re.compile(r"^.+@.+<mailto:(.+@.+)>$|^Recipient Address:\s+(.+)$")
_RCPT = re.compile(r"unknown recipient or mailbox unavailable ->.+@.+\.[a-zA-Z]+")


def _is_office365(mail: Mail) -> bool:
    marks = sum(word in mail.subject for word in ("Undeliverable:", "Onbestelbaar:", "Não_entregue:"))
    marks += sum(1 for name in _O365_HEADERS if mail.header(name))
    marks += any(_OUTLOOK_HOST.search(r) for r in mail.headers("received"))
    marks += bool(_OUTLOOK_HOST.search(mail.header("message-id")))
    return marks >= 2


def read_office365(mail: Mail) -> list[Report]:
    if not _is_office365(mail):
        return []
    reports: list[Report] = []
    started = ended = False
    for raw in mail.notice.split("\n"):
        line = raw.rstrip()
        if not started:
            started = bool(_O365_STARTS.match(line))
            continue
        recipient = _O365_RECIPIENT.match(line) if line else None
        if recipient:
            reports.append(Report(recipient=first_address(recipient.group(1) or recipient.group(2))))
        elif line and reports and not ended:
            if _O365_ERROR.match(line):
                reports[-1].diagnosis = line
            elif reports[-1].diagnosis:
                ended = bool(_O365_END.match(line))
                reports[-1].diagnosis += "" if ended else " " + line
    _status_fields(mail, reports)
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        if not report.status or report.status.endswith(".0.0"):
            report.status = find_status(report.diagnosis) or report.status
        report.command = "RCPT" if _RCPT.search(report.diagnosis) else None
        report.reason = online_reason(report.status)
    return [r for r in reports if r.recipient]


def _status_fields(mail: Mail, reports: list[Report]) -> None:
    """The DSN part completes what the page did not say (never replaces its diagnostic)."""
    fields = DsnFields()
    for line in mail.dsn.split("\n"):
        fields.feed(line.rstrip())
    for report, dsn in zip(reports, fields.reports, strict=False):
        report.status = report.status or dsn.status
        report.action = report.action or dsn.action
        report.rhost = report.rhost or dsn.rhost
        if not report.diagnosis:
            report.diagnosis, report.spec = dsn.diagnosis, dsn.spec


_OUTLOOK_MESSAGES = (
    (
        "hostunknown",
        ("The mail could not be delivered to the recipient because the domain is not reachable",),
    ),
    ("userunknown", ("Requested action not taken: mailbox unavailable",)),
)


def read_outlook_com(mail: Mail) -> list[Report]:
    """Outlook.com / Hotmail's DSNs (X-Message-Delivery, X-Message-Info)."""
    marks = ("Delivery Status Notification" in mail.subject) + bool(mail.header("x-message-delivery"))
    marks += bool(mail.header("x-message-info")) + any(".hotmail.com" in r for r in mail.headers("received"))
    if marks < 2:
        return []
    fields = DsnFields()
    for line in mail.dsn.split("\n"):
        fields.feed(line.rstrip())
    reports = [r for r in fields.reports if r.recipient]
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        if not report.diagnosis:
            report.diagnosis = ("Delivery to the following recipients has been delayed." if report.action == "delayed"
                                else "Unable to deliver message to the following recipients, due to being unable to "
                                "connect successfully to the destination mail server.")  # fmt: skip
        report.reason = next((r for r, p in _OUTLOOK_MESSAGES if any(x in report.diagnosis for x in p)), None)
    return reports
