"""HCL (formerly IBM, Lotus) Domino and Notes notices.

Domino ("DELIVERY FAILURE: ..."): "Your message ... was not delivered to: <address> because:
<reason>", the reason in Domino's own words ("User ... not listed in Domino Directory").
Notes ("Undeliverable message"): "------- Failure Reasons --------", the reason, then the address.
"""

from __future__ import annotations

from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import DsnFields, Report, contains_any, first_address, sweep

_DOMINO = (
    ("filtered", ("Cannot route mail to user",)),
    ("systemerror", ("Several matches found in Domino Directory",)),
    ("userunknown", ("not listed in Domino Directory", "not listed in public Name & Address Book",
                     "no se encuentra en el Directorio de Domino", "non répertorié dans l'annuaire Domino",
                     "Domino ディレクトリには見つかりません")),
)  # fmt: skip
_NOTES = (
    ("networkerror", ("Message has exceeded maximum hop count",)),
    ("userunknown", ("User not listed in public Name & Address Book", "ディレクトリのリストにありません")),
)


def _reason(text: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    return next((reason for reason, phrases in table if contains_any(text, phrases)), None)


def read_domino(mail: Mail) -> list[Report]:
    if not (mail.subject.startswith("DELIVERY FAILURE:") or "DELIVERY_FAILURE" in mail.subject):
        return []
    reports: list[Report] = []
    fields = DsnFields()
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        started = started or line.startswith("Your message")
        if not started or not line:
            continue
        if line == "was not delivered to:":
            reports.append(Report())
        elif reports and line.startswith("  ") and "@" in line and " " not in line[3:]:
            reports[-1].recipient = first_address(line)
        elif (reports and line == "because:") or (reports and reports[-1].diagnosis == "because:"):
            reports[-1].diagnosis = line
        elif reports:
            fields.feed(line)
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.reason = _reason(report.diagnosis, _DOMINO)
        if (
            report.reason is None
            and "non r" in report.diagnosis
            and "dans l'annuaire Domino" in report.diagnosis
        ):
            report.reason = "userunknown"  # the French wording in ISO-8859-1, undecoded
    return [r for r in reports if r.recipient]


def read_notes(mail: Mail) -> list[Report]:
    if not mail.subject.startswith("Undeliverable message"):
        return []
    reports: list[Report] = []
    diagnosis = ""
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith("------- Returned Message --------"):
            break
        started = started or line.startswith("------- Failure Reasons ")
        if not started or not line or line.startswith("-"):
            continue
        if "@" in line and " " not in line and first_address(line) == line:
            reports.append(Report(recipient=line, diagnosis=diagnosis))
            diagnosis = ""
        elif reports:
            reports[-1].diagnosis += " " + line
        else:
            diagnosis += " " + line
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        report.reason = _reason(report.diagnosis, _NOTES)
    return reports
