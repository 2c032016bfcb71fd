"""The public classification API: raw bytes in, one `Classification` out.

Order (from the research): bounce first, because many NDRs carry `Auto-Submitted:
auto-replied`; then automatic replies (out-of-office or other); then unsubscribe requests;
then a human reply. Every rule reads only the sender's NEW text, so a person answering above
a quoted out-of-office notice is a person. When unsure between human and automatic the
answer is human: that is the one error this engine must never make the other way round.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from typing import Any

from replyguard.domain.addresses import sender_of
from replyguard.domain.inbound.autoreply import AutoVerdict, detect_auto_reply
from replyguard.domain.inbound.bounce import BounceInfo, detect_bounce
from replyguard.domain.inbound.bounce_facts import facts_of
from replyguard.domain.inbound.bounce_policy import verdict
from replyguard.domain.inbound.bounce_reasons import reason_for
from replyguard.domain.inbound.complaints import Complaint, complaint_of
from replyguard.domain.inbound.mta import Report
from replyguard.domain.inbound.notices import Notice, detect_notice
from replyguard.domain.inbound.parse import (
    body_text,
    extract_body,
    header,
    limits_of,
    parse_message,
    raw_header,
)
from replyguard.domain.inbound.person_answer import person_answer
from replyguard.domain.inbound.quotes import new_text_with_history
from replyguard.domain.inbound.returndate import find_return_date
from replyguard.domain.inbound.unsubscribe import detect_unsubscribe
from replyguard.domain.message_ids import message_ids_in, parent_id, thread_references
from replyguard.domain.states import ReplyKind

_MAX_NOTICE_CHARS = 4000

#: CPU seconds (of the classifying thread) one message may take. The read bounds keep every
#: message we know of far below it (42 ms at worst, a 760 KB Subject; docs/benchmarks.md); a
#: message that still gets there stops being read at the next stage and gets the safe answer:
#: a human reply, evidence `limit:time`, so its lead stops and a person reads it.
MAX_CLASSIFY_CPU_S = 2.0


class _OutOfTime(Exception):
    """The message used up its CPU budget."""


class _Budget:
    """The CPU time one message may still take, checked between the classifier's stages."""

    def __init__(self, limit: float) -> None:
        self._end = time.thread_time() + limit

    def check(self) -> None:
        if time.thread_time() >= self._end:
            raise _OutOfTime


@dataclass(frozen=True, slots=True)
class Classification:
    """What one inbound message is, with the evidence for it and its threading headers."""

    kind: ReplyKind
    return_date: date | None
    reply_text: str
    evidence: tuple[str, ...]
    left_company: bool
    new_contact: str | None
    bounce: BounceInfo | None
    subject: str
    from_address: str | None
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    date: datetime | None
    #: A spam complaint's facts (which email, which address): what ties it to a lead.
    complaint: Complaint | None = None
    #: An automatic message whose new text reads as a person's answer (person_answer.py).
    reads_as_person: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON object `replyguard inspect --json` prints."""
        return {
            "kind": self.kind.value,
            "return_date": self.return_date.isoformat() if self.return_date else None,
            "reply_text": self.reply_text,
            "evidence": list(self.evidence),
            "left_company": self.left_company,
            "new_contact": self.new_contact,
            "bounce": self.bounce.to_json() if self.bounce else None,
            "subject": self.subject,
            "from_address": self.from_address,
            "message_id": self.message_id,
            "in_reply_to": self.in_reply_to,
            "references": list(self.references),
            "date": self.date.isoformat() if self.date else None,
            "complaint": self.complaint.to_json() if self.complaint else None,
        }


# "Name <a@b>", "\"Name, Inc\" <a@b>", "a@b", "a@b (comment)": the common shapes, read by one
# regular expression; anything else goes through sender_of.
_SURROGATE = re.compile("[\udc80-\udcff]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SIMPLE_FROM = re.compile(
    r'^\s*(?:[^<>@",;()\\]*|"[^"\\<>]*")\s*<\s*([^\s<>@",;()\\]+@[^\s<>@",;()\\]+)\s*>\s*$'
    r'|^\s*([^\s<>@",;()\\]+@[^\s<>@",;()\\]+)\s*(?:\([^()"\\]*\))?\s*$'
)


def _from_address(msg: EmailMessage) -> str | None:
    # The RAW value: a decoded display name may itself look like an address (see sender_of).
    value = raw_header(msg, "from") or ""
    if _SURROGATE.search(value):  # 8-bit bytes as compat32 keeps them: an EAI address is UTF-8
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    simple = _SIMPLE_FROM.match(value)
    found = (simple.group(1) or simple.group(2)).strip() if simple else sender_of(value)
    # A control character (a NUL) is never part of an address, and could not even be stored.
    return None if found is None or _CONTROL.search(found) else found


def _date(msg: EmailMessage) -> datetime | None:
    value = header(msg, "date")
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    # Only aware datetimes leave the domain; a zone-less Date is read as UTC.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


_BARE_UNSUBSCRIBE = re.compile(
    r"^\s*(?:unsubscribe|unsubscribe me|opt[- ]?out|abmelden|désabonner)\s*$", re.I
)


def _bare_unsubscribe(subject: str) -> bool:
    return bool(_BARE_UNSUBSCRIBE.match(subject))


def _notice_kind(notice: Notice) -> tuple[ReplyKind, tuple[str, ...], BounceInfo | None]:
    """Read receipts and provider events other than bounces and complaints have no effect
    (auto_reply: logged only); complaints and one-tap unsubscribes stop all mail."""
    if notice.kind in ("complaint", "apple_unsubscribe") or notice.event == "complaint":
        return ReplyKind.UNSUBSCRIBE, notice.evidence, None
    if notice.event != "bounce":
        return ReplyKind.AUTO_REPLY, notice.evidence, None
    action = "failed" if notice.bounce_permanent else "delayed"
    report = Report(recipient=notice.bounce_recipient, diagnosis=notice.bounce_diagnostic,
                    status=notice.bounce_status, action=action)  # fmt: skip
    facts = facts_of(report)
    reason, why = reason_for(facts)
    hard = notice.bounce_permanent and verdict(reason, facts.status, action)
    info = BounceInfo(hard, reason, facts.status, action, notice.bounce_recipient, notice.bounce_message_id,
                      notice.bounce_diagnostic or None, why[:200])  # fmt: skip
    kind = ReplyKind.BOUNCE_HARD if hard else ReplyKind.BOUNCE_SOFT
    return kind, (*notice.evidence, f"bounce:{reason}", f"bounce:why:{why[:80]}"), info


def classify(raw: bytes) -> Classification:
    """Classify raw message bytes. Raises MessageParseError only (for non-mail input)."""
    return classify_message(parse_message(raw))


def classify_message(msg: EmailMessage, *, cpu_limit: float | None = None) -> Classification:
    """Classify a parsed message; see the module docstring for the order of the rules.

    At most `cpu_limit` CPU seconds (default `MAX_CLASSIFY_CPU_S`), checked between stages;
    past it the answer is a human reply with `limit:time` in its evidence."""
    budget = _Budget(MAX_CLASSIFY_CPU_S if cpu_limit is None else cpu_limit)
    try:
        return _classify(msg, budget)
    except _OutOfTime:
        return _out_of_time(msg)


def _threading(msg: EmailMessage) -> dict[str, Any]:
    """The headers that tie a message to its thread, read the same for every answer."""
    return {
        "message_id": header(msg, "message-id") or None,
        "in_reply_to": parent_id(message_ids_in(header(msg, "in-reply-to"))),
        "references": thread_references(message_ids_in(header(msg, "references"))),
    }


def _out_of_time(msg: EmailMessage) -> Classification:
    """The safe answer for a message that took too long: a person reads it."""
    return Classification(
        kind=ReplyKind.HUMAN_REPLY,
        return_date=None,
        reply_text="",
        evidence=("default:human", "limit:time", *limits_of(msg)),
        left_company=False,
        new_contact=None,
        bounce=None,
        subject=header(msg, "subject"),
        from_address=_from_address(msg),
        **_threading(msg),
        date=_date(msg),
    )


def _automatic(
    msg: EmailMessage, auto: AutoVerdict, reply: str, subject: str, sent: datetime | None
) -> tuple[ReplyKind, tuple[str, ...], date | None, bool]:
    """(kind, evidence, return date, reads as a person) of a message a machine sent. Any
    auto-reply with a return date is an absence, worded "out of the office" or not."""
    if auto.left_company:
        return ReplyKind.AUTO_REPLY, auto.evidence, None, False
    return_date, rule = find_return_date(reply, subject, sent, header(msg, "x-apple-criteria"), auto.language)
    if auto.out_of_office or return_date is not None:
        return ReplyKind.OUT_OF_OFFICE, (*auto.evidence, *((rule,) if rule else ())), return_date, False
    replying = bool(header(msg, "in-reply-to") or header(msg, "references"))
    answer = person_answer(reply, subject, replying=replying)
    return ReplyKind.AUTO_REPLY, (*auto.evidence, *((answer,) if answer else ())), None, answer is not None


def _classify(msg: EmailMessage, budget: _Budget) -> Classification:
    subject = header(msg, "subject")
    sender = _from_address(msg)
    sent = _date(msg)
    body = extract_body(msg)
    full = body_text(body)
    budget.check()
    kind = ReplyKind.HUMAN_REPLY
    evidence: tuple[str, ...] = ()
    return_date: date | None = None
    left_company, new_contact = False, None
    reads_as_person = False

    notice = detect_notice(msg, subject, full, sender)
    bounce, bounce_ev = (None, ()) if notice else detect_bounce(msg, subject, sender, full)
    budget.check()
    if notice is not None:
        kind, evidence, bounce = _notice_kind(notice)
        reply = full.strip()[:_MAX_NOTICE_CHARS]
    elif bounce is not None:
        kind = ReplyKind.BOUNCE_HARD if bounce.hard else ReplyKind.BOUNCE_SOFT
        evidence = bounce_ev
        # A robot's notice has no quoted history to strip; its text is shown as it came.
        reply = full.strip()[:_MAX_NOTICE_CHARS]
    else:
        reply, quoted = new_text_with_history(body)
        unsubscribe_ev = detect_unsubscribe(msg, subject, reply)
        arf = any(e.startswith("arf:") for e in unsubscribe_ev)
        auto = detect_auto_reply(msg, subject, reply, sender, quoted=quoted)
        budget.check()
        if arf:
            kind, evidence = ReplyKind.UNSUBSCRIBE, unsubscribe_ev
        elif auto.automatic and _bare_unsubscribe(subject):
            # Apple Mail's one-tap unsubscribe and similar tools mark their mail automatic; a
            # subject that is only "unsubscribe" is a request whatever the headers say.
            kind, evidence = ReplyKind.UNSUBSCRIBE, ("subject:unsubscribe-only", *auto.evidence)
        elif auto.automatic:
            left_company, new_contact = auto.left_company, auto.new_contact
            kind, evidence, return_date, reads_as_person = _automatic(msg, auto, reply, subject, sent)
        elif unsubscribe_ev:
            kind, evidence = ReplyKind.UNSUBSCRIBE, unsubscribe_ev
        else:
            evidence = ("default:human",)
    cuts = (*limits_of(msg), *body.cuts)
    complained = kind is ReplyKind.UNSUBSCRIBE and any(
        e.startswith(("arf:", "complaint:", "provider:ses:complaint")) for e in evidence
    )
    return Classification(
        kind=kind,
        return_date=return_date,
        reply_text=reply,
        evidence=(*evidence, *cuts),
        left_company=left_company,
        new_contact=new_contact,
        bounce=bounce,
        subject=subject,
        from_address=sender,
        **_threading(msg),
        date=sent,
        complaint=complaint_of(msg, full) if complained else None,
        reads_as_person=reads_as_person,
    )
