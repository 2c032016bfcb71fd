"""Whether a mailbox's provider keeps a copy of what it sends in the Sent folder by itself.

Gmail / Google Workspace and Microsoft 365 / Outlook.com save every message submitted through
their SMTP servers in the account's Sent folder: appending one ourselves would show each email
twice. Other servers (Dovecot, Postfix, most hosts) do not: for a mailbox connected to one
with a Sent folder, the worker appends a copy of each email the server accepted.
"""

from __future__ import annotations

#: SMTP submission hosts whose provider saves sent mail in the Sent folder itself.
_SAVES_SENT = ("smtp.gmail.com", "smtp.googlemail.com", "smtp.office365.com", "smtp-mail.outlook.com")
_SAVES_SENT_DOMAINS = (".outlook.com", ".office365.com")


def provider_saves_sent(smtp_host: str) -> bool:
    """True for Google's and Microsoft's SMTP submission hosts."""
    host = smtp_host.lower().rstrip(".")
    return host in _SAVES_SENT or host.endswith(_SAVES_SENT_DOMAINS)
