"""Provider payload → raw RFC 5322 bytes. Pure functions: no HTTP, no database.

Each returns None when the payload carries no message at all (the endpoint answers 400).
Raw MIME is always preferred; a message is rebuilt from parsed fields only when the provider
was not configured to send it raw.
"""

from __future__ import annotations

import base64
import binascii
import json
from email.utils import formataddr
from typing import Any

from replyguard.entrypoints.http.compose import Attachment, compose, header_pairs
from replyguard.entrypoints.http.forms import Form, decode

#: Top-level Postmark fields that become these headers (the `Headers` array repeats none).
_POSTMARK_TOP = ("From", "To", "Cc", "Reply-To", "Subject", "Date")


def mailgun_raw(form: Form) -> bytes | None:
    """`body-mime` (route URL ending in `mime`), or a message rebuilt from the parsed post."""
    for name in ("body-mime", "message"):
        raw = form.raw(name)
        if raw:
            return raw
    headers_json = form.text("message-headers")
    if headers_json is None:
        return None
    try:
        listed = json.loads(headers_json)
    except ValueError:
        listed = []
    pairs = [
        (str(item[0]), str(item[1]))
        for item in (listed if isinstance(listed, list) else [])
        if isinstance(item, list) and len(item) == 2
    ]
    return compose(pairs, form.text("body-plain"), form.text("body-html"), _form_files(form))


def sendgrid_raw(form: Form) -> bytes | None:
    """`email` ("POST the raw, full MIME message"), or a message rebuilt from parsed fields."""
    raw = form.raw("email")
    if raw:
        return raw
    charsets = _json_object(form.text("charsets"))

    def field(name: str) -> str | None:
        data = form.raw(name)
        return None if data is None else decode(data, str(charsets.get(name) or "utf-8"))

    block = field("headers")
    if block is None:
        return None
    return compose(header_pairs(block), field("text"), field("html"), _form_files(form))


def postmark_raw(payload: dict[str, Any]) -> bytes | None:
    """`RawEmail` ("include raw email" on), or a message rebuilt from Postmark's JSON."""
    raw_email = payload.get("RawEmail")
    if isinstance(raw_email, str) and raw_email:
        return raw_email.encode("utf-8", "replace")
    if not any(payload.get(k) for k in ("From", "FromFull", "TextBody", "HtmlBody", "Headers")):
        return None
    top = {
        "From": _postmark_from(payload),
        "To": _text(payload.get("To")),
        "Cc": _text(payload.get("Cc")),
        "Reply-To": _text(payload.get("ReplyTo")),
        "Subject": _text(payload.get("Subject")),
        "Date": _text(payload.get("Date")),
    }
    pairs = [(name, value) for name, value in top.items() if value]
    taken = {name.lower() for name in _POSTMARK_TOP}
    for item in payload.get("Headers") or []:
        if isinstance(item, dict) and _text(item.get("Name")).lower() not in taken:
            pairs.append((_text(item.get("Name")), _text(item.get("Value"))))
    text, html = payload.get("TextBody"), payload.get("HtmlBody")
    return compose(
        pairs,
        text if isinstance(text, str) and text else None,
        html if isinstance(html, str) and html else None,
        _postmark_attachments(payload.get("Attachments")),
    )


def _postmark_from(payload: dict[str, Any]) -> str:
    full = payload.get("FromFull")
    if isinstance(full, dict) and full.get("Email"):
        return formataddr((_text(full.get("Name")), _text(full.get("Email"))))
    return _text(payload.get("From"))


def _postmark_attachments(items: object) -> list[Attachment]:
    found = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        try:
            data = base64.b64decode(_text(item.get("Content")), validate=True)
        except (binascii.Error, ValueError):
            continue
        found.append(Attachment(_text(item.get("Name")), _text(item.get("ContentType")), data))
    return found


def _form_files(form: Form) -> list[Attachment]:
    return [
        Attachment(part.filename or name, part.content_type or "application/octet-stream", part.data)
        for name, part in form.files()
    ]


def _json_object(value: str | None) -> dict[str, Any]:
    try:
        found = json.loads(value or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
