"""Transports: where an outgoing email is handed over, chosen by a one-line spec."""

from __future__ import annotations

import re
from pathlib import Path

from replyguard.adapters.transports.base import Transport
from replyguard.adapters.transports.maildir import MaildirTransport, NullTransport
from replyguard.adapters.transports.smtp import SmtpTransport

FORMS = (
    "maildir:PATH, smtp://user:pass@host:port, smtp+starttls://user:pass@host:587,"
    " smtps://user:pass@host:port or null:"
)


def make_transport(spec: str) -> Transport:
    """Build the transport a spec names: one of `FORMS`.

    Errors name the accepted forms and never repeat a password.
    """
    spec = spec.strip()
    scheme, colon, rest = spec.partition(":")
    scheme = scheme.lower()
    if scheme == "maildir" and colon:
        if not rest:
            raise ValueError(f"maildir: needs a directory, e.g. maildir:./outbox; accepted: {FORMS}")
        return MaildirTransport(Path(rest))
    if scheme in ("smtp", "smtp+starttls", "smtps") and rest.startswith("//"):
        return SmtpTransport(spec)
    if scheme == "null" and not rest:
        return NullTransport()
    # Name only a plausible scheme: the rest of the spec may hold a password.
    shown = f"{scheme!r}" if colon and re.fullmatch(r"[a-z][a-z0-9+.-]{0,19}", scheme) else "spec"
    raise ValueError(f"unknown transport {shown}; accepted: {FORMS}")
