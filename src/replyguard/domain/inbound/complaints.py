"""Who complained, and about which of our emails: what ties a spam complaint to its lead.

A complaint comes from the mailbox provider (abuse@, staff@, an SES notification), never from
the person, so its From says nothing about the lead. What does:
- the Message-ID of the email complained about: attached whole (ARF's message/rfc822, JMRP),
  as its headers (text/rfc822-headers), or in an SES notification's `mail` headers. Our
  Message-IDs carry an HMAC of the send key, so a match on one is proof;
- the complaining address: ARF's `Original-Rcpt-To`, Hotmail's `X-HmXmrOriginalRecipient`, an
  SES notification's `complainedRecipients`. An address alone is only a claim.

Contract: `complaint_of(msg, body)` never raises; both fields may be None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from email.message import Message

from replyguard.domain.inbound.bounce import original_message_id
from replyguard.domain.inbound.parse import content_type, decode_part, header, own_parts

_MAX_JSON = 200_000
_ORIGINAL_RCPT = re.compile(r"^\s*Original-Rcpt-To\s*:\s*<?([^>\s]+@[^>\s]+)>?", re.I | re.M)
_ID = re.compile(r"<[^<>\s]+@[^<>\s]+>")


@dataclass(frozen=True, slots=True)
class Complaint:
    """The complained-about email and the complaining address, as far as the report says."""

    recipient: str | None
    original_message_id: str | None

    def to_json(self) -> dict[str, str | None]:
        return {"recipient": self.recipient, "original_message_id": self.original_message_id}


def complaint_of(msg: Message, body: str) -> Complaint:
    recipient = hotmail_recipient(msg) or _arf_recipient(msg)
    message_id = original_message_id(msg, "")
    if recipient is None or message_id is None:
        ses_recipient, ses_id = _ses(body)
        recipient, message_id = recipient or ses_recipient, message_id or ses_id
    return Complaint(recipient.strip().lower() if recipient else None, message_id)


def hotmail_recipient(msg: Message) -> str | None:
    """Hotmail's JMRP names the complaining address on the report or the attached message."""
    for part in own_parts(msg):
        value = header(part, "x-hmxmroriginalrecipient").strip("<> ")
        if value:
            return value
        payload = part.get_payload() if content_type(part) == "message/rfc822" else None
        inner = payload[0] if isinstance(payload, list) and payload else None
        if isinstance(inner, Message) and header(inner, "x-hmxmroriginalrecipient"):
            return header(inner, "x-hmxmroriginalrecipient").strip("<> ") or None
    return None


def _arf_recipient(msg: Message) -> str | None:
    for part in own_parts(msg):
        if content_type(part) != "message/feedback-report":
            continue
        payload = part.get_payload()
        blocks = payload if isinstance(payload, list) else []
        for block in blocks:
            if isinstance(block, Message) and header(block, "original-rcpt-to"):
                return header(block, "original-rcpt-to").strip("<> ") or None
        found = _ORIGINAL_RCPT.search(decode_part(part)[:20000] if not blocks else "")
        return found.group(1) if found else None
    return None


def _ses(body: str) -> tuple[str | None, str | None]:
    """An Amazon SES complaint notification (bare, or inside an SNS envelope)."""
    text = body.strip()
    if not text.startswith("{") or len(text) > _MAX_JSON:
        return None, None
    try:
        data, _end = json.JSONDecoder(strict=False).raw_decode(text)
        if isinstance(data, dict) and isinstance(data.get("Message"), str):
            data = json.loads(data["Message"][:_MAX_JSON], strict=False)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    complaint = data.get("complaint") if isinstance(data.get("complaint"), dict) else {}
    mail = data.get("mail") if isinstance(data.get("mail"), dict) else {}
    assert isinstance(complaint, dict) and isinstance(mail, dict)
    rows = complaint.get("complainedRecipients")
    first = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else {}
    recipient = str(first.get("emailAddress") or "") or None
    return recipient, ses_message_id(mail)


def ses_message_id(mail: dict[str, object]) -> str | None:
    """The Message-ID of the email an SES event is about (its `mail` headers): ours binds it."""
    common = mail.get("commonHeaders")
    if isinstance(common, dict) and isinstance(common.get("messageId"), str):
        found = _ID.search(common["messageId"])
        if found:
            return found.group(0)
    headers = mail.get("headers")
    for item in headers if isinstance(headers, list) else []:
        if isinstance(item, dict) and str(item.get("name", "")).lower() == "message-id":
            found = _ID.search(str(item.get("value", "")))
            if found:
                return found.group(0)
    return None
