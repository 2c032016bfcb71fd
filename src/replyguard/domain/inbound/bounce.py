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
from replyguard.domain.inbound.bounce_facts import facts_of
from replyguard.domain.inbound.bounce_policy import escalates, is_temporary, verdict
from replyguard.domain.inbound.bounce_reasons import WORDING_ONLY, reason_for
from replyguard.domain.inbound.mta import Mail, Report, read_reports
from replyguard.domain.inbound.mta.mail import returned_copy_cut
from replyguard.domain.inbound.mta.text import DsnFields, first_address
from replyguard.domain.inbound.parse import (
    content_type,
    decode_part,
    header,
    header_names,
    own_parts,
    raw_header,
)
from replyguard.domain.inbound.subjects import has_reply_prefix

# Delivery robots in all their spellings: mailer-daemon, MAILER_DAEMON, post_master,
# post.master, mail.delivery, bounce(s), mdaemon, and list managers' own robots.
_DAEMON_FROM = re.compile(
    r"^(?:mailer[-_.]?daemon|post[-_.]?master|mail[-_.]?daemon|mail[-_.]?delivery|bounces?|"
    r"mdaemon|nobody|mail[-_.]?(?:administrator|system)|smtp[-_.]?gateway)(?:[+.-][^@]*)?@",
    re.IGNORECASE,
)
_DAEMON_NAME = re.compile(
    r"mail delivery (?:sub)?system|mailer[- _]?daemon|post[-_ ]?master|mail administrator|"
    r"mail delivery service|delivery status notification",
    re.I,
)
# A mailing-list manager's robot: Mailman's -owner/-bounces/-request, Google Groups.
_LIST_ROBOT = re.compile(r"^[^@]+-(?:owner|bounces?|request|admin)(?:\+[^@]*)?@|@googlegroups\.com$", re.I)
_NDR_SUBJECT = re.compile(
    r"undeliver|undelivered|delivery (?:status notification|failure|failed|has failed|"
    r"problem|report|notification)|mail delivery failed|returned mail|failure notice|"
    r"non[- ]?delivery|nondeliverable|could not be delivered|not delivered|"
    r"message delayed|delayed mail|warning: .{0,30}(?:delayed|not yet been delivered|could not send)|"
    r"unzustellbar|nicht zustellbar|non remis|onbestelbaar|olevererbar|non recapitabile|"
    r"no entregado|no se puede entregar|não entregue|niedostarczon|mail system error|returned to sender|"
    r"delivery notification|rejected|mail (?:failure|error|failed)|failed mail|"
    r"delivery (?:status|warning)|moderator approval|"
    r"エラー|送信(?:失敗|できません)|配信(?:不能|失敗)|不達|未達|返送|"
    r"недоставлен|не доставлен|nedoručiteln|kézbesíthetetlen",
    re.IGNORECASE,
)
_NDR_TEXT = phrases.compile_lower(
    r"could not be delivered|couldn't be delivered|delivery (?:has )?failed|undeliverable|"
    r"permanent(?:ly)? (?:error|failure|fatal)|fatal error|recipient address rejected|"
    r"user unknown|returned to (?:the )?sender|unable to deliver|delivery to the following|"
    r"(?:message|mail) (?:was )?not delivered|failed permanently|mailbox (?:is )?(?:full|"
    r"unavailable)|not yet been delivered|delivery (?:is |has been )?delayed|"
    r"following (?:address|recipient)s? (?:failed|had permanent)|reject(?:ed)?|quota|"
    r"does not exist|no such (?:user|domain)|delivery attempts|(?<![\d.])[45]\.\d{1,3}\.\d{1,3}(?!\.?\d)|"
    r"\b5[05][0-9][ -]|over quota|message size|not (?:a )?valid|could not deliver|"
    r"(?:was|were) not delivered|can(?:not|'t) be delivered|not listed in|"
    r"did not (?:exactly )?match|network error|warning message only|will be retried|"
    r"fatal errors?|is delayed|message (?:is )?delayed|deferred|"
    r"permission to post|not allowed to post|awaits moderator|held until the list moderator|"
    r"nicht zugestellt|konnte nicht zugestellt|unzustellbar|existiert nicht|"
    r"n'a pas pu être (?:remis|distribué)|non remis|n'existe pas|"
    r"no se (?:ha )?(?:podido|pudo) entregar|no existe|non (?:è stato possibile recapitare|recapitabile)|"
    r"não (?:foi possível entregar|pôde ser entregue)|kan niet worden bezorgd|onbestelbaar|"
    r"nie (?:został|można) dostarczyć|nie istnieje|не (?:может быть )?доставлен|"
    r"送信(?:に)?失敗|送信できませんでした|配信(?:でき|され)ませんでした|届きませんでした|存在しません|"
    r"groups\.google\.com/support|had delivery problems|non-delivered information|account is disabled|"
    r"not a member of this mailing list|incorrectly constructed|malformed address|"
    r"error has occurred while attempting to deliver|could not find a gateway|"
    r"did not reach the following recipient|recipient name is not recognized|failed addresses follow|"
    r"no valid recipients|unknown host|loop alert|duplicated message-id|loop back warning",
)
_MESSAGE_ID = re.compile(r"^\s*Message-ID\s*:\s*(<[^>\s]+>)", re.IGNORECASE | re.MULTILINE)
# A warning that delivery is still being tried (Sendmail, Exchange, Gmail write one of these).
_DELAY = re.compile(
    r"warning message only|you do not need to resend|will (?:keep|continue) trying|"
    r"delivery attempts will continue|has not yet been delivered|not yet been delivered|\bdeferred:",
    re.IGNORECASE,
)
_SUCCESS_ACTIONS = frozenset({"delivered", "relayed", "expanded"})
_RETURNED_TYPES = frozenset({"message/rfc822", "text/rfc822-headers", "message/rfc822-headers"})
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
    why: str = ""  # the phrase or code that decided the reason

    @property
    def counts_toward_hard(self) -> bool:
        """Whether this soft bounce counts toward 'repeated soft bounces become hard': only a
        permanent failure that speaks about the recipient (bounce_policy.escalates); never a delay
        or a temporary (4.x.x) failure, never a problem of our own sending."""
        return not is_temporary(self.status, self.action) and escalates(self.reason)

    @property
    def delayed(self) -> bool:
        """A warning that delivery is still being tried: shown, never counted."""
        return (self.action or "").startswith("delay")

    def to_json(self) -> dict[str, Any]:
        return {
            "hard": self.hard,
            "reason": self.reason,
            "status": self.status,
            "action": self.action,
            "recipient": self.recipient,
            "original_message_id": self.original_message_id,
            "diagnostic": self.diagnostic,
            "why": self.why,
            "delayed": self.delayed,
        }


def original_message_id(msg: Message, text: str) -> str | None:
    """The Message-ID of the message a report returns (attached, or as a header line in its text)."""
    for part in own_parts(msg):
        ctype = content_type(part)
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


def _returned_to(msg: Message) -> set[str]:
    """The recipients (To, Cc) of the message a report returns, lower-cased: whom we wrote to."""
    found: set[str] = set()
    for part in own_parts(msg):
        ctype = content_type(part)
        inner: Message | None = None
        if ctype in {"message/rfc822", "message/global"}:
            payload = part.get_payload()
            first = payload[0] if isinstance(payload, list) and payload else None
            inner = first if isinstance(first, Message) else None
        elif ctype in {"text/rfc822-headers", "message/rfc822-headers"}:
            inner = HeaderParser().parsestr(decode_part(part))
        if inner is not None:
            for name in ("to", "cc"):
                found.update(a.lower().strip(".") for a in _ADDR_ANY.findall(header(inner, name)))
    return found


def _ours(failed: list[Report], msg: Message) -> Report:
    """The failed recipient the report is about for us: in a report on several recipients (an
    Exchange NDR for a group, a relay that expanded an alias), the one our returned email was
    addressed to; else the first, as the reporting server listed them."""
    if len(failed) > 1:
        ours = _returned_to(msg)
        for report in failed:
            if report.recipient and report.recipient.lower() in ours:
                return report
    return failed[0]


def _flufl_failures(msg: Message) -> tuple[set[str], set[str]]:
    try:
        from flufl.bounce import all_failures  # noqa: PLC0415 (slow to import (0.1 s): only a bounce needs it)

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
    if from_address and _LIST_ROBOT.search(from_address):
        signals.append("from:list-manager")
    return signals


def _robot_signals(msg: Message, subject: str, signals: list[str]) -> list[str]:
    """Signs that no person sent this. A subject alone ("Re: our offer was rejected") is
    something a person can write, so a non-standard NDR needs one of these as well."""
    robot = [s for s in signals if s != "subject:ndr"]
    if raw_header(msg, "return-path") in {"<>", "< >"}:
        robot.append("header:empty-return-path")
    if robot or "subject:ndr" not in signals or has_reply_prefix(subject):
        return robot
    if any(content_type(p) in _RETURNED_TYPES for p in own_parts(msg)[1:]):
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


def _complete(msg: Message, report: Report, notice: str, evidence: list[str]) -> None:
    """Fill a failed address the format did not give: X-Failed-Recipients, the prose, flufl.bounce."""
    if report.recipient and "@" in report.recipient and not report.recipient.startswith("@"):
        return
    report.recipient = first_address(header(msg, "x-failed-recipients")) or None
    if report.recipient is None:
        report.recipient = _address_in_notice(msg, notice)
        if report.recipient:
            evidence.append("notice:recipient")
    if report.recipient is None:  # flufl.bounce is slow (its detectors scan every line): last resort
        temporary, permanent = _flufl_failures(msg)
        if temporary or permanent:
            evidence.append("flufl:" + ("permanent" if permanent else "temporary"))
            report.recipient = sorted(permanent or temporary)[0]


def _failed(reports: list[Report]) -> list[Report]:
    return [r for r in reports if (r.action or "failed") in ("failed", "delayed")]


def _dsn_reports(text: str) -> list[Report]:
    fields = DsnFields()
    for line in text.split("\n"):
        fields.feed(line.rstrip())
    return [r for r in fields.reports if r.recipient or r.status or r.action]


def _is_bounce(
    msg: Message, mail: Mail, from_address: str | None, evidence: list[str]
) -> tuple[bool | None, list[str]]:
    """(True, signals) for a bounce; (None, []) for a DSN of successes only; (False, []) else."""
    failed: list[Report] = []
    if mail.dsn:
        reported = _dsn_reports(mail.dsn)
        if reported and all(r.action in _SUCCESS_ACTIONS for r in reported):
            return None, []
        failed = _failed(reported)
        if failed:
            evidence.append("dsn:rfc3464")
    signals = _ndr_signals(msg, mail.subject, from_address)
    robot = _robot_signals(msg, mail.subject, signals)
    # Some MTAs paste the DSN fields inline instead of in a message/delivery-status part.
    inline = not failed and robot and "final-recipient:" in mail.notice.lower()
    if inline and any(r.action in ("failed", "delayed") for r in _dsn_reports(mail.notice)):
        evidence.append("dsn:inline")
    # Failure wording stands near the top of a notice: its first 8,000 characters are read.
    if not evidence and (not robot or not _NDR_TEXT.search(f"{mail.notice[:8000]} {mail.subject}".lower())):
        return False, []
    return True, signals


def detect_bounce(
    msg: Message, subject: str, from_address: str | None, text: str
) -> tuple[BounceInfo | None, tuple[str, ...]]:
    """The bounce this message reports, with the rules that fired; (None, ()) otherwise."""
    if phrases.first_match(phrases.CHALLENGE, text[:3000]):
        return None, ()
    notice = returned_copy_cut(text)[:20000]
    mail = Mail.of(msg, subject, notice)
    evidence: list[str] = []
    bounce, signals = _is_bounce(msg, mail, from_address, evidence)
    if not bounce:
        return None, ()
    evidence.extend(signals)
    reports, agent = read_reports(mail)
    failed = _failed(reports)
    if failed:
        report = _ours(failed, msg)
        evidence.append(f"mta:{agent}")
    else:  # prose no reader knows: the whole notice is the diagnostic
        report = Report(diagnosis=f"{notice}\n{subject}", action="delayed" if _DELAY.search(notice) else None)
    _complete(msg, report, notice, evidence)
    facts = facts_of(report)
    reason, why = reason_for(facts)
    evidence.append(f"bounce:{reason}")
    if why.startswith(WORDING_ONLY):
        why = why[len(WORDING_ONLY) :]
        evidence.append("bounce:wording-only")
    if why:
        evidence.append(f"bounce:why:{why[:80]}")
    if facts.command:
        evidence.append(f"bounce:command:{facts.command}")
    if is_temporary(facts.status, report.action):
        evidence.append("bounce:delayed" if (report.action or "").startswith("delay") else "bounce:temporary")
    info = BounceInfo(
        hard=verdict(reason, facts.status, report.action),
        reason=reason,
        status=facts.status,
        action=report.action,
        recipient=report.recipient,
        original_message_id=original_message_id(msg, text),
        diagnostic=report.diagnosis[:1000] if failed else None,
        why=why[:200],
    )
    return info, tuple(evidence)
