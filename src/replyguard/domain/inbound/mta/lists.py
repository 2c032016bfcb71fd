# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""Mailing-list managers' refusals: fml (X-MLServer: fml, from <list>-admin@).

A list manager answers a post it will not distribute: the sender is not a member, the message
looks like a loop or a duplicate. None of these says anything about a recipient's mailbox: the
reasons are "rejected" (our sender is not allowed to post) and "systemerror" (the list's loop
protection).
"""

from __future__ import annotations

from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import Report, between, contains_any, sweep

_FML_TEXT = (
    ("rejected", (" header may cause mail loop", "NOT MEMBER article from ", "reject mail from ", "reject spammers:",
                  "You are not a member of this mailing list")),
    ("systemerror", ("Duplicated Message-ID", " has detected a loop condition so that", "Loop Back Warning:")),
    ("securityerror", ("Security alert:",)),
)  # fmt: skip
_FML_SUBJECT = (
    ("rejected", (" are not member", "NOT MEMBER article from ", "reject mail ", "Spam mail from a spammer is rejected")),
    ("systemerror", ("fml system error message", "Loop Alert: ", "Loop Back Warning: ", "WARNING: UNIX FROM Loop")),
    ("securityerror", ("Security Alert",)),
)  # fmt: skip


def read_fml(mail: Mail) -> list[Report]:
    if not mail.header("x-mlserver") or mail.header("from").find("-admin@") < 1:
        return []
    text = mail.notice.split("Original mail as follows:", 1)[0]
    reports: list[Report] = []
    for raw in text.split("\n"):
        line = raw.strip()
        address = between(line, "<", ">")
        if address and "@" in address:
            reports.append(Report(recipient=address, diagnosis=line))
        elif line and reports:
            reports[-1].diagnosis += " " + line
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        found = next((r for r, phrases in _FML_TEXT if contains_any(report.diagnosis, phrases)), None)
        report.reason = found or next((r for r, p in _FML_SUBJECT if contains_any(mail.subject, p)), None)
    return reports
