"""Bounces: RFC 3464 delivery status notifications first, then non-standard NDRs.

Contract: `detect_bounce(msg, ...)` returns a `BounceInfo` when the message reports a failed
or delayed delivery, else None. A DSN needs a failed or delayed recipient (or, like Gmail's
2025 NDR with an empty status part, a returned message plus failure wording). A non-standard
NDR needs a mailer-daemon-like sender, NDR subject or `X-Failed-Recipients`, and failure
wording or a failure found by flufl.bounce. Challenge/response robots dressed as DSNs
(Boxbe, Bluebottle) are not bounces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from typing import Any

from replyguard.domain.inbound import phrases
from replyguard.domain.inbound.bounce_reasons import is_hard, reason_for
from replyguard.domain.inbound.parse import decode_part, header, header_names, own_parts, raw_header
from replyguard.domain.inbound.subjects import has_reply_prefix

_DAEMON_FROM = re.compile(
    r"^(?:mailer-daemon|postmaster|mail-daemon|maildelivery|mail\.delivery|bounces?|"
    r"mdaemon|nobody)(?:[+.-][^@]*)?@",
    re.IGNORECASE,
)
_DAEMON_NAME = re.compile(r"mail delivery (?:sub)?system|mailer[- ]daemon|postmaster", re.I)
_NDR_SUBJECT = re.compile(
    r"undeliver|undelivered|delivery (?:status notification|failure|failed|has failed|"
    r"problem|report|notification)|mail delivery failed|returned mail|failure notice|"
    r"non[- ]?delivery|nondeliverable|could not be delivered|not delivered|"
    r"message delayed|delayed mail|warning: .{0,30}(?:delayed|not yet been delivered)|"
    r"unzustellbar|nicht zustellbar|non remis|onbestelbaar|olevererbar|non recapitabile|"
    r"no entregado|não entregue|niedostarczon|mail system error|returned to sender|"
    r"delivery notification|rejected|mail (?:failure|error)|failed mail|"
    r"delivery (?:status|warning)",
    re.IGNORECASE,
)
_NDR_TEXT = phrases.compile_lower(
    r"could not be delivered|couldn't be delivered|delivery (?:has )?failed|undeliverable|"
    r"permanent(?:ly)? (?:error|failure|fatal)|fatal error|recipient address rejected|"
    r"user unknown|returned to (?:the )?sender|unable to deliver|delivery to the following|"
    r"(?:message|mail) (?:was )?not delivered|failed permanently|mailbox (?:is )?(?:full|"
    r"unavailable)|not yet been delivered|delivery (?:is |has been )?delayed|"
    r"following (?:address|recipient)s? (?:failed|had permanent)|reject(?:ed)?|quota|"
    r"does not exist|no such (?:user|domain)|delivery attempts|\b[45]\.\d{1,3}\.\d{1,3}\b|"
    r"\b5[05][0-9][ -]|over quota|message size|not (?:a )?valid|could not deliver|"
    r"(?:was|were) not delivered|can(?:not|'t) be delivered|not listed in|"
    r"did not (?:exactly )?match|network error|warning message only|will be retried|"
    r"fatal errors?|is delayed|message (?:is )?delayed",
)
_STATUS = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
_FIELD = re.compile(r"^(Final-Recipient|Original-Recipient|Action|Status|Diagnostic-Code)\s*:"
                    r"\s*(.*(?:\n[ \t].*)*)", re.IGNORECASE | re.MULTILINE)  # fmt: skip
_MESSAGE_ID = re.compile(r"^\s*Message-ID\s*:\s*(<[^>\s]+>)", re.IGNORECASE | re.MULTILINE)
# Exim, qmail and others paste the returned message after a line like this one.
_RETURNED_COPY = re.compile(
    r"^[-\s]*(?:This is a copy of|Below this line is a copy|Original message follows|"
    r"--- Below this line|Undelivered message follows|Original message as received|"
    r"-+ ?Header of the (?:source|original) (?:mail|message))",
    re.IGNORECASE | re.MULTILINE,
)
_SUCCESS_ACTIONS = frozenset({"delivered", "relayed", "expanded"})
_RETURNED_TYPES = frozenset({"message/rfc822", "text/rfc822-headers", "message/rfc822-headers"})
_ADDR = re.compile(r"<?([\w.+'=-]+@[\w-]+(?:\.[\w-]+)+)>?")
_ADDR_ANY = re.compile(r"[\w.+'=-]+@[\w.-]+")
_LINE_ADDR = re.compile(
    r"^[\s>*-]*<?([\w.+'=/-]+@[\w-]+(?:\.[\w-]+)+)>?\s*[:.,]?\s*(?:\(.*\))?$", re.MULTILINE
)
# RCPT TO:<a@b> in a transcript; '<a@b>: host mx said' (Postfix); '"a@b":' (GMX);
# 'a@b on Thu, 29 Apr' (Exchange 2003, GroupWise); '<a@b>... User unknown' (Sendmail).
_RCPT_TO = re.compile(
    r"RCPT TO:\s*<([^>\s]+@[^>\s]+)>|^\s*[<\"]([\w.+'=/-]+@[\w-]+(?:\.[\w-]+)+)[>\"]:\s|"
    r"^\s*([\w.+'=/-]+@[\w-]+(?:\.[\w-]+)+) on [A-Z][a-z]{2}, \d|"
    r"<([\w.+'=/-]+@[\w-]+(?:\.[\w-]+)+)>\.\.\. ",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class BounceInfo:
    """One bounce: the failed recipient, why, and the Message-ID of what we had sent."""

    hard: bool
    reason: str
    status: str | None
    action: str | None
    recipient: str | None
    original_message_id: str | None
    diagnostic: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "hard": self.hard,
            "reason": self.reason,
            "status": self.status,
            "action": self.action,
            "recipient": self.recipient,
            "original_message_id": self.original_message_id,
            "diagnostic": self.diagnostic,
        }


@dataclass(slots=True)
class _Recipient:
    address: str | None = None
    action: str | None = None
    status: str | None = None
    diagnostic: str = ""


def _clean_address(value: str) -> str | None:
    match = _ADDR.search(value.split(";", 1)[-1])
    return match.group(1) if match else None


def _dsn_recipients(part: Message) -> list[_Recipient]:
    """Per-recipient fields of a message/delivery-status part, however it was parsed."""
    payload = part.get_payload()
    if isinstance(payload, list):
        text = "\n\n".join(_fields_text(p) for p in payload if isinstance(p, Message))
    else:
        text = decode_part(part)
    return _recipients_from_text(text)


def _recipients_from_text(text: str) -> list[_Recipient]:
    out: list[_Recipient] = []
    current = _Recipient()
    for name, value in _FIELD.findall(text.replace("\r\n", "\n")):
        key, val = name.lower(), " ".join(value.split())
        if key == "final-recipient" and (current.address or current.status):
            out.append(current)
            current = _Recipient()
        if key in {"final-recipient", "original-recipient"}:
            current.address = current.address or _clean_address(val)
        elif key == "action":
            # Some MTAs write "failure" or "Delayed": keep the RFC 3464 vocabulary.
            action = val.lower()
            current.action = "failed" if action.startswith("fail") else action
            current.action = "delayed" if action.startswith("delay") else current.action
        elif key == "status":
            found = _STATUS.search(val)
            current.status = ".".join(found.groups()) if found else None
        else:
            current.diagnostic = val
    if current.address or current.status or current.action:
        out.append(current)
    return out


def _fields_text(block: Message) -> str:
    return "\n".join(f"{k}: {header(block, k)}" for k in block)


def _original_message_id(msg: Message, text: str) -> str | None:
    for part in msg.walk():
        ctype = part.get_content_type()
        if ctype in {"message/rfc822", "message/global"}:
            payload = part.get_payload()
            inner = payload[0] if isinstance(payload, list) and payload else None
            if isinstance(inner, Message) and header(inner, "message-id"):
                return header(inner, "message-id")
        elif ctype in {"text/rfc822-headers", "message/rfc822-headers"}:
            headers = HeaderParser().parsestr(decode_part(part))
            if header(headers, "message-id"):
                return header(headers, "message-id")
    own = header(msg, "message-id")
    for found in _MESSAGE_ID.findall(text):
        if found != own:
            return str(found)
    return None


def _flufl_failures(msg: Message) -> tuple[set[str], set[str]]:
    try:
        from flufl.bounce import all_failures

        temporary, permanent = all_failures(msg)
    except Exception:  # third-party detectors must never break classification
        return set(), set()
    return {_text(a) for a in temporary}, {_text(a) for a in permanent}


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _ndr_signals(msg: Message, subject: str, from_address: str | None) -> list[str]:
    signals = []
    if (from_address and _DAEMON_FROM.match(from_address)) or _DAEMON_NAME.search(header(msg, "from")):
        signals.append("from:mailer-daemon")
    elif header(msg, "from") and not from_address:
        signals.append("from:empty")  # "From: <>": only delivery robots send that
    if _NDR_SUBJECT.search(subject):
        signals.append("subject:ndr")
    if "x-failed-recipients" in header_names(msg):
        signals.append("header:x-failed-recipients")
    return signals


def _robot_signals(msg: Message, subject: str, signals: list[str]) -> list[str]:
    """Signs that no person sent this. A subject alone ("Re: our offer was rejected") is
    something a person can write, so a non-standard NDR needs one of these as well."""
    robot = [s for s in signals if s != "subject:ndr"]
    if raw_header(msg, "return-path") in {"<>", "< >"}:
        robot.append("header:empty-return-path")
    if robot or "subject:ndr" not in signals or has_reply_prefix(subject):
        return robot
    if any(p.get_content_type() in _RETURNED_TYPES for p in own_parts(msg)[1:]):
        robot.append("structure:returned-message")
    else:
        temporary, permanent = _flufl_failures(msg)
        if temporary or permanent:  # one of flufl.bounce's MTA-specific detectors agrees
            robot.append("flufl:detected")
    return robot


def _address_in_notice(msg: Message, notice: str) -> str | None:
    """The failed address as qmail, Yahoo, Exim and most prose NDRs write it: alone on a line
    ("<lead@example.org>:") or in the SMTP transcript ("RCPT TO:<lead@example.org>"). The
    bounce's own From/To and robot addresses are skipped; None sends the caller to flufl.bounce."""
    own = {a.lower() for a in _ADDR_ANY.findall(header(msg, "from") + " " + header(msg, "to"))}
    for pattern in (_LINE_ADDR, _RCPT_TO):
        for match in pattern.finditer(notice):
            found = next(g for g in match.groups() if g)
            if found.lower() not in own and not _DAEMON_FROM.match(found):
                return str(found)
    return None


def _complete(msg: Message, first: _Recipient, notice: str, evidence: list[str]) -> None:
    """Fill the failed address and status from X-Failed-Recipients, flufl.bounce, the prose."""
    if first.address is None and header(msg, "x-failed-recipients"):
        first.address = _clean_address(header(msg, "x-failed-recipients"))
    if first.address is None:
        first.address = _address_in_notice(msg, notice)
        if first.address:
            evidence.append("notice:recipient")
    if first.address is None:  # flufl.bounce is slow (its detectors scan every line): last resort
        temporary, permanent = _flufl_failures(msg)
        if temporary or permanent:
            evidence.append("flufl:" + ("permanent" if permanent else "temporary"))
            first.address = first.address or sorted(permanent or temporary)[0]
    if first.status is None:
        found = _STATUS.search(first.diagnostic or notice)
        first.status = ".".join(found.groups()) if found else None


def detect_bounce(
    msg: Message, subject: str, from_address: str | None, text: str
) -> tuple[BounceInfo | None, tuple[str, ...]]:
    """The bounce this message reports, with the rules that fired; (None, ()) otherwise."""
    if phrases.first_match(phrases.CHALLENGE, text[:3000]):
        return None, ()
    notice = _RETURNED_COPY.split(text, 1)[0][:20000]
    # Only the message's own parts: a person forwarding a bounce has not bounced.
    dsn_parts = [p for p in own_parts(msg) if p.get_content_type() == "message/delivery-status"]
    evidence: list[str] = []
    recipients: list[_Recipient] = []
    if dsn_parts:
        reported = [r for part in dsn_parts for r in _dsn_recipients(part)]
        # "delivered", "relayed" and "expanded" are success notices, not failures.
        recipients = [r for r in reported if (r.action or "failed") in {"failed", "delayed"}]
        if reported and all(r.action in _SUCCESS_ACTIONS for r in reported):
            return None, ()
        if recipients:
            evidence.append("dsn:rfc3464")
    signals = _ndr_signals(msg, subject, from_address)
    robot = _robot_signals(msg, subject, signals)
    if not recipients and robot and "final-recipient:" in notice.lower():
        # Some MTAs paste the DSN fields inline instead of in a message/delivery-status part.
        recipients = [r for r in _recipients_from_text(notice) if r.action in {"failed", "delayed"}]
        if recipients:
            evidence.append("dsn:inline")
    if not evidence and (not robot or not _NDR_TEXT.search((notice + " " + subject).lower())):
        return None, ()
    evidence.extend(signals)
    first = recipients[0] if recipients else _Recipient()
    _complete(msg, first, notice, evidence)
    reason = reason_for(first.status, first.action, (first.diagnostic, notice, subject))
    evidence.append(f"bounce:{reason}")
    info = BounceInfo(
        hard=is_hard(reason, first.status),
        reason=reason,
        status=first.status,
        action=first.action,
        recipient=first.address,
        original_message_id=_original_message_id(msg, text),
        diagnostic=first.diagnostic or None,
    )
    return info, tuple(evidence)
