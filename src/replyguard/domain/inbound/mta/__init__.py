"""Per-MTA readers of bounce reports: which recipient failed, and what the server said.

Contract: `read_reports(mail)` returns `(reports, agent)`: the failed recipients as the first
reader that recognises the bounce's format reads them, and that reader's name; `([], "")`
when none does. Readers never raise and never decide hard or soft; they only give each
recipient's diagnostic, SMTP command, status, and the reason their format names outright (a
qmail "Sorry, no mailbox here by that name", an Exim "retry timeout exceeded").

One small module per MTA family, each learnt from the format's documentation, its source and
sisimai's readers of the same family (https://libsisimai.org, BSD-2-Clause). The order is
sisimai's: formats with strong signatures first, the generic RFC 3464 reader last.
"""

from __future__ import annotations

from collections.abc import Callable

from replyguard.domain.inbound.mta import (
    carriers,
    dsn,
    exim,
    google,
    lists,
    lotus,
    microsoft,
    opensource,
    postfix,
    providers,
    qmail,
    sendmail,
    servers,
)
from replyguard.domain.inbound.mta.mail import Mail
from replyguard.domain.inbound.mta.text import Report

__all__ = ["Mail", "Report", "read_reports"]

_Reader = Callable[[Mail], list[Report]]
READERS: tuple[tuple[str, _Reader], ...] = (
    ("exim", exim.read),
    ("sendmail", sendmail.read),
    ("office365", microsoft.read_office365),
    ("exchange2003", microsoft.read_exchange2003),
    ("verizon", carriers.read_verizon),
    ("fml", lists.read_fml),
    ("ses-receiving", providers.read_ses_receiving),
    ("postfix", postfix.read),
    ("outlook.com", microsoft.read_outlook_com),
    ("yahoo", qmail.read_yahoo),
    ("opensmtpd", opensource.read_opensmtpd),
    ("qmail", qmail.read),
    ("courier", opensource.read_courier),
    ("gmail", google.read_gmail),
    ("gmx", providers.read_gmx),
    ("zoho", providers.read_zoho),
    ("domino", lotus.read_domino),
    ("notes", lotus.read_notes),
    ("imail", servers.read_imail),
    ("mcafee", servers.read_mcafee),
    ("googlegroups", google.read_groups),
    ("sendmail5", sendmail.read_v5),
    ("messagingserver", servers.read_messaging_server),
    ("ezweb", carriers.read_ezweb),
    ("dragonfly", opensource.read_dragonfly),
    ("unnamed-x3", servers.read_unnamed_x3),
    ("rfc3464", dsn.read),
)


def read_reports(mail: Mail) -> tuple[list[Report], str]:
    """The failed recipients of this bounce as its format tells them; see the module docstring."""
    for name, reader in READERS:
        reports = [r for r in reader(mail) if r.recipient or r.diagnosis]
        if reports:
            return reports, name
    return [], ""
