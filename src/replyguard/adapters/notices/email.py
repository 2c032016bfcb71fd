"""Notices by email to the thread's owner, through the configured transport (Maildir, SMTP).

The Message-ID is derived from the notice's uid: a retried notice carries the same one, so a
mail client shows it once. The notice is text/plain; the words of a reply or a lead file are
passed through `as_text` (no control characters, no bidirectional overrides), and the subject
is one line.
"""

from __future__ import annotations

from datetime import datetime

from replyguard.adapters.notices.base import ChannelResult, NoticeMessage, as_text, headline, summary_text
from replyguard.adapters.transports.base import Outcome, Transport
from replyguard.domain.addresses import domain_of
from replyguard.domain.outgoing import OutgoingEmail


class EmailChannel:
    name = "email"

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def deliver(self, notice: NoticeMessage, now: datetime) -> ChannelResult:
        domain = domain_of(notice.sender_address) or "replyguard.invalid"
        subject = f"[replyguard] {headline(notice.payload)}".replace("\r", " ").replace("\n", " ")
        email = OutgoingEmail(
            send_key=notice.uid,
            message_id=f"<{notice.uid}@{domain}>",
            from_name="replyguard",
            from_address=notice.sender_address,
            to_name="",
            to_address=notice.recipient,
            subject=as_text(subject)[:300],
            body=as_text(summary_text(notice.payload)) + "\n",
            date=now,
        )
        try:
            delivery = self.transport.send(email)
        except ValueError as exc:  # an address or header the message cannot carry
            return ChannelResult(False, f"could not build the notice email: {exc}")
        return ChannelResult(
            delivery.outcome is Outcome.ACCEPTED, f"{delivery.outcome}: {delivery.detail}"[:500]
        )
