"""Mobile carriers' own notices: au by KDDI (EZweb) and Verizon Wireless.

EZweb ("Mail System Error - Returned Mail" from Postmaster@ezweb.ne.jp): the recipient in
angle brackets and a sentence of au's own ("The user(s) account is disabled.") or an SMTP
transcript; a refusal by the recipient's spam filter carries "X-SPASIGN: NG".
Verizon (post_master@vtext.com, sysadmin@...vzwpix.com): "Error: ..." then the original
message's details, where the recipient is the "RCPT TO:" line.
"""

from __future__ import annotations

from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import (
    Report,
    between,
    contains_any,
    find_command,
    first_address,
    sweep,
)

_EZWEB = (
    ("expired", ("Your message was not delivered within ",)),
    ("mailboxfull", ("The user(s) account is temporarily over quota",)),
    ("onhold", ("Each of the following recipients was rejected by a remote mail server",)),
    ("suspend", ("The user(s) account is disabled.", "The user(s) account is temporarily limited.")),
)
_EZWEB_STARTS = ("The user(s) ", "Your message ", "Each of the following", "<")
_EZWEB_COPY = ("--------------------------------------------------", "Content-Type: message/rfc822")


def _is_ezweb(mail: Mail) -> bool:
    sender, message_id = mail.header("from"), mail.header("message-id")
    marks = ("Postmaster@ezweb.ne.jp" in sender) + ("Postmaster@au.com" in sender)
    marks += mail.subject == "Mail System Error - Returned Mail"
    marks += any("ezweb.ne.jp (EZweb Mail) with" in r or ".au.com (" in r for r in mail.headers("received"))
    marks += (".ezweb.ne.jp>" in message_id) + (".au.com>" in message_id)
    return marks >= 2


def read_ezweb(mail: Mail) -> list[Report]:
    if not _is_ezweb(mail):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith(_EZWEB_COPY):
            break
        started = started or line.startswith(_EZWEB_STARTS)
        if not started or not line or not line.isascii():
            continue
        if (
            "<" in line
            and "@" in line
            and ">" in line
            and (line.find("Recipient: <") > 1 or line.startswith("<"))
        ):
            reports.append(Report(recipient=first_address(between(line, "<", ">")), diagnosis=line))
        elif reports:
            reports[-1].diagnosis += " " + line
            if " >>> " in line:
                reports[-1].command = find_command(line)
        else:
            reports.append(Report(diagnosis=line))  # the sentence before the address
    spam = mail.header("x-spasign") == "NG"
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.command = report.command or find_command(report.diagnosis)
        report.reason = (
            "filtered" if spam else next((r for r, p in _EZWEB if contains_any(report.diagnosis, p)), None)
        )
        domain = (report.recipient or "").rsplit("@", 1)[-1]
        if not report.reason and domain not in ("ezweb.ne.jp", "au.com") and report.diagnosis.startswith("<"):
            report.reason = "userunknown"
    return _merge_leading(reports)


def _merge_leading(reports: list[Report]) -> list[Report]:
    """A sentence written before the first address belongs to that address."""
    if len(reports) > 1 and reports[0].recipient is None:
        first = reports[1]
        first.diagnosis = sweep(f"{reports[0].diagnosis} {first.diagnosis}")
        first.reason = first.reason or reports[0].reason
        reports = reports[1:]
    return [r for r in reports if r.recipient]


def read_verizon(mail: Mail) -> list[Report]:
    sender = mail.header("from")
    if "post_master@vtext.com" not in sender and not ("sysadmin@" in sender and ".vzwpix.com" in sender):
        return []
    text = mail.notice
    body, _, details = text.partition("Message details:")
    if not details:
        body, _, details = text.partition("Original Message:")
    recipient = first_address(between(details.replace("RCPT TO: ", "\nTo: "), "\nTo: ", "\n"))
    diagnosis = sweep(body.split("Error: ", 1)[1]) if "Error: " in body else ""
    if not recipient:
        return []
    unknown = contains_any(
        diagnosis, ("550 - Requested action not taken: no such user here", "No valid recipients")
    )
    return [
        Report(
            recipient=recipient, diagnosis=f"Error: {diagnosis}", reason="userunknown" if unknown else None
        )
    ]
