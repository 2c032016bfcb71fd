"""Text every database column will take, decided before any write. Pure: no I/O.

Inbound mail produces strings no column accepts: PostgreSQL refuses a NUL in text, neither
database can encode a lone surrogate as UTF-8, and PostgreSQL refuses a value longer than its
`varchar(n)`. Real mail has all three (quoted-printable `=00`, binary parts labelled as text,
UTF-16 labelled UTF-8, UTF-7 and escape charsets, encoded words, absurd addresses). One such
message used to fail its transaction on every attempt and block every message behind it.

Contract: every function returns a value that both databases store, and names each change
it made as an evidence entry (`storable:<field>:<change>`), so that nothing is altered
silently. NULs are removed; lone surrogates become U+FFFD (a pair that belongs together is
joined into its character); over-long text is cut; an address that no column can hold (over
320 characters, a domain over 255, or control characters) is dropped, never cut — a cut
address would be somebody else's.
"""

from __future__ import annotations

import dataclasses
import re

from replyguard.domain.inbound.classify import Classification

MAX_ADDRESS = 320  # RFC 5321 4.5.3.1: 64 + 1 + 255; the width of every address column
MAX_DOMAIN = 255
MAX_MESSAGE_ID = 998  # a header line's limit, and inbound_messages.message_id
MAX_SUBJECT = 1000
MAX_TEXT = 20000
MAX_EVIDENCE = 200

_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_IN_ADDRESS = re.compile(r"[\x00-\x20\x7f]")


def storable_text(value: str, limit: int | None = None) -> tuple[str, tuple[str, ...]]:
    """`value` without NULs or lone surrogates, at most `limit` characters; and what changed."""
    changes: list[str] = []
    if "\x00" in value:
        value = value.replace("\x00", "")
        changes.append("nul-removed")
    if _SURROGATE.search(value):
        # Through UTF-16 with surrogatepass: a high and low surrogate that belong together
        # become their character, a lone one becomes U+FFFD.
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        changes.append("surrogate-replaced")
    if limit is not None and len(value) > limit:
        value = value[:limit]
        changes.append(f"cut-to-{limit}")
    return value, tuple(changes)


def storable_address(value: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The address unchanged, or None (with the reason) when no address column can hold it."""
    if value is None:
        return None, ()
    domain = value.rpartition("@")[2]
    if len(value) > MAX_ADDRESS:
        return None, (f"dropped-over-{MAX_ADDRESS}",)
    if len(domain) > MAX_DOMAIN:
        return None, (f"dropped-domain-over-{MAX_DOMAIN}",)
    if _NOT_IN_ADDRESS.search(value) or _SURROGATE.search(value):
        return None, ("dropped-control-characters",)
    return value, ()


def storable_classification(c: Classification) -> Classification:
    """`c` with every field that reaches the database made storable, and evidence of each change."""
    notes: list[str] = []

    def text(field: str, value: str, limit: int) -> str:
        clean, changes = storable_text(value, limit)
        notes.extend(f"storable:{field}:{change}" for change in changes)
        return clean

    def optional(field: str, value: str | None, limit: int) -> str | None:
        return None if value is None else (text(field, value, limit) or None)

    def address(field: str, value: str | None) -> str | None:
        clean, changes = storable_address(value)
        notes.extend(f"storable:{field}:{change}" for change in changes)
        return clean

    bounce = c.bounce
    if bounce is not None:
        bounce = dataclasses.replace(
            bounce,
            recipient=address("bounce-recipient", bounce.recipient),
            original_message_id=optional("bounce-message-id", bounce.original_message_id, MAX_MESSAGE_ID),
            diagnostic=optional("bounce-diagnostic", bounce.diagnostic, MAX_TEXT),
            reason=text("bounce-reason", bounce.reason, MAX_EVIDENCE),
            status=optional("bounce-status", bounce.status, MAX_EVIDENCE),
            action=optional("bounce-action", bounce.action, MAX_EVIDENCE),
        )
    complaint = c.complaint
    if complaint is not None:
        complaint = dataclasses.replace(
            complaint,
            recipient=address("complaint-recipient", complaint.recipient),
            original_message_id=optional(
                "complaint-message-id", complaint.original_message_id, MAX_MESSAGE_ID
            ),
        )
    cleaned = dataclasses.replace(
        c,
        reply_text=text("text", c.reply_text, MAX_TEXT),
        subject=text("subject", c.subject, MAX_SUBJECT),
        from_address=address("from", c.from_address),
        new_contact=address("new-contact", c.new_contact),
        message_id=optional("message-id", c.message_id, MAX_MESSAGE_ID),
        in_reply_to=optional("in-reply-to", c.in_reply_to, MAX_MESSAGE_ID),
        references=tuple(text("references", ref, MAX_MESSAGE_ID) for ref in c.references),
        bounce=bounce,
        complaint=complaint,
        evidence=tuple(text("evidence", e, MAX_EVIDENCE) for e in c.evidence),
    )
    if not notes:
        return c
    return dataclasses.replace(cleaned, evidence=(*cleaned.evidence, *dict.fromkeys(notes)))
