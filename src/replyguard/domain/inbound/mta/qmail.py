# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""qmail's notices ("failure notice") and those of its many clones.

After the greeting ("Hi. This is the qmail-send program at ..."), each failed recipient is a
line "<lead@example.org>:" followed by qmail-remote's account of the session; its wordings
(qmail-remote.c, qmail-local.c, qmail-ldap) name the stage and often the reason:
"... does not like recipient." is RCPT TO, "Connected to ... but sender was rejected." is MAIL
FROM, "Sorry, I couldn't find any host named ..." is an unknown domain.
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

_TITLES = ("failure notice", "Failure Notice")
_STARTS = ("Hi. This is the qmail", "He/Her is not ", "unable to deliver your message to the following addresses",
           "Su mensaje no pudo ser entregado", "Sorry, we were unable to deliver your message to the following address",
           "This is the machine generated message from mail service", "This is the mail delivery agent at",
           "Unable to deliver message to the following address", "Unfortunately, your mail was not delivered to the following address:",
           "Your mail message to the following address", "Your message to the following addresses", "We're sorry.")  # fmt: skip
_COPY = ("--- Below this line is a copy of the message.", "--- Below this line is a copy of the mail header.",
         "--- Below the next line is a copy of the message.", "--- Mensaje original adjunto.", "Original message follows.")  # fmt: skip
_STAGES = (
    ("CONN", (" but greeting failed.",)),
    ("HELO", (" but my name was rejected.",)),
    ("MAIL", (" but sender was rejected.",)),
    ("RCPT", (" does not like recipient.",)),
    ("DATA", (" failed on DATA command", " failed after I sent the message")),
)
_EXPIRED = "this message has been in the queue too long."
_MESSAGES = (
    ("hostunknown", ("Sorry, I couldn't find any host ",)),
    ("mailboxfull", ("disk quota exceeded",)),
    ("mesgtoobig", ("Message size exceeds fixed maximum message size:",)),
    ("networkerror", ("Sorry, I wasn't able to establish an SMTP connection",
                      "Sorry. Although I'm listed as a best-preference MX or A for that host")),
    ("notaccept", ("Sorry, I couldn't find a mail exchanger or IP address",)),
    ("systemerror", ("bad interpreter: No such file or directory", "system error", "Unable to")),
    ("systemfull", ("Requested action not taken: mailbox unavailable (not enough free space)",)),
    ("userunknown", ("no mailbox here by that name",)),
    # qmail-ldap
    ("exceedlimit", ("The message exeeded the maximum size the user accepts",)),
    ("suspend", ("Mailaddress is administrativly disabled", "Mailaddress is administrativley disabled",
                 "Mailaddress is administratively disabled", "Mailaddress is administrativeley disabled")),
    ("systemerror", ("Automatic homedir creator crashed", "Illegal value in LDAP attribute",
                     "LDAP attribute is not given but mandatory", "Timeout while performing search on LDAP server",
                     "Too many results returned but needs to be unique", "Permanent error while executing qmail-forward",
                     "Temporary error in automatic homedir creation", "Temporary error while executing qmail-forward",
                     "Temporary failure in LDAP lookup", "Unable to contact LDAP server",
                     "Unable to login into LDAP server, bad credentials")),
)  # fmt: skip


def _is_qmail(mail: Mail) -> bool:
    return mail.subject.strip() in _TITLES or any("(qmail " in r for r in mail.headers("received"))


def read(mail: Mail) -> list[Report]:
    if not _is_qmail(mail):
        return []
    reports: list[Report] = []
    remote: list[str] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith(_COPY):
            break
        if not started:
            started = any(s in line for s in _STARTS)
            continue
        if not line:
            continue
        if line.startswith("<") and "@" in line and line.endswith(">:"):
            reports.append(Report(recipient=first_address(between(line, "<", ">:"))))
            remote.append("")
        elif reports:
            reports[-1].diagnosis += line + " "
            if line.startswith("Remote host said:"):
                remote[-1] = line
            if reports[-1].rhost is None:
                reports[-1].rhost = _host(line)
    for report, said in zip(reports, remote, strict=True):
        _finish(report, said)
    return [r for r in reports if r.recipient]


def _host(line: str) -> str | None:
    for start in ("Giving up on ", "Connected to ", "remote host "):
        if start in line:
            return sweep(line.split(start, 1)[1]).split(" ")[0].rstrip(".:") or None
    return None


def _finish(report: Report, said: str) -> None:
    report.diagnosis = sweep(report.diagnosis)
    report.command = next((c for c, marks in _STAGES if contains_any(report.diagnosis, marks)), None)
    if report.command is None and "no SMTP connection got far enough" in report.diagnosis:
        report.command = find_command(report.diagnosis)
    if report.command == "HELO":
        report.reason = "blocked"
    elif " does not like recipient." in report.diagnosis and _EXPIRED in report.diagnosis:
        report.reason = "onhold"  # both: the generic rules decide from the remote server's words
    else:
        report.reason = _reason(said) or _reason(report.diagnosis)
    report.command = report.command or find_command(report.diagnosis)


def _reason(text: str) -> str | None:
    if not text:
        return None
    for reason, phrases in _MESSAGES:
        if contains_any(text, phrases):
            return reason
    return "expired" if _EXPIRED in text else None


def read_yahoo(mail: Mail) -> list[Report]:
    """Yahoo! Mail's qmail-derived notices (X-YMailISG): "Remote host said: ... [RCPT_TO]"."""
    if not mail.header("x-ymailisg"):
        return []
    reports: list[Report] = []
    started = False
    for raw in mail.lines:
        line = raw.rstrip()
        if line.startswith(_COPY):
            break
        started = started or line.startswith("Sorry, we were unable to deliver your message")
        if not started or not line or line.startswith("Sorry, we were unable"):
            continue
        if line.startswith("<") and "@" in line and ">:" in line:
            reports.append(Report(recipient=first_address(line[: line.find(">:")])))
        elif reports and line.startswith("Remote host said:"):
            reports[-1].diagnosis, reports[-1].command = line, find_command(line)
        elif reports and reports[-1].diagnosis == "Remote host said:":
            command = find_command(line)
            if command:
                reports[-1].command = command
            else:
                reports[-1].diagnosis = line
        elif reports:
            reports[-1].diagnosis += " " + line
    for report in reports:
        report.diagnosis = sweep(report.diagnosis)
        if (
            report.command is None
            and "<" in report.diagnosis
            and "@" in report.diagnosis
            and ">" in report.diagnosis
        ):
            report.command = "RCPT"  # Yahoo quotes the address only in answers to RCPT TO
    return [r for r in reports if r.recipient]
