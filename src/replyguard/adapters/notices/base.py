"""The notice channel port: hand one notice to one place a person reads, say whether it arrived.

Every channel is at-least-once: a delivery whose success was not recorded (a crash, a lost
answer) is tried again with the same `uid`, which each channel passes on (webhook-id,
Message-ID, the Slack text) so that the receiver can drop the second copy.

Outside text never speaks in our channels. A notice carries words we did not write — a
prospect's reply and subject, names and companies from a lead file — and each channel gets
them escaped for what it interprets (issue 21, item 5): a Slack-compatible webhook gets mrkdwn
with `&`, `<` and `>` escaped (so `<!channel>` or `<https://evil.test|Open thread>` is shown,
not obeyed) and `@` at the start of a word kept from becoming a mention (Mattermost and
Rocket.Chat read `@channel` and `@all` in webhook text); an email notice is text/plain with
control characters and bidirectional overrides removed (`as_text`); the signed webhook carries
everything as JSON strings, data for a program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class NoticeMessage:
    uid: str  # stable id for receivers to deduplicate by
    recipient: str  # the thread's owner (or assignee)
    sender_address: str  # the thread's mailbox, for the email channel
    created_at: datetime
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChannelResult:
    delivered: bool
    detail: str = ""


class NoticeChannel(Protocol):
    name: str

    def deliver(self, notice: NoticeMessage, now: datetime) -> ChannelResult:
        """Deliver once. Never raises for delivery problems: they are a failed ChannelResult."""
        ...


# C0 and C1 controls but tab and newline (a terminal's escape sequences, a carriage return that
# overwrites a line), and the bidirectional marks, embeddings, overrides and isolates that make
# text read in another order than it is written.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MENTION = re.compile(r"(?<![\w.+-])@(?=\w)")
_WORD_JOINER = "\u2060"
_CUT_ENTITY = re.compile(r"&[a-z]*$")


def as_text(text: str) -> str:
    """Text to be read as text: without control characters and bidirectional overrides."""
    return _CONTROLS.sub("", text)


def for_slack(text: str) -> str:
    """Text for a Slack-compatible mrkdwn field: shown as written, never a link, a mention or a
    channel-wide ping. `&`, `<`, `>` escaped as Slack documents; `@word` kept from mentioning."""
    escaped = as_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MENTION.sub("@" + _WORD_JOINER, escaped)


def cut_escaped(text: str, limit: int) -> str:
    """At most `limit` characters of escaped text, never ending inside an entity (`&am`)."""
    return text if len(text) <= limit else _CUT_ENTITY.sub("", text[:limit])


def headline(payload: dict[str, Any]) -> str:
    """One line: product, lead, what happened."""
    if "inbound_id" in payload and "thread" not in payload:
        return f"Inbound message {payload['inbound_id']} kept for a person ({payload.get('kind')})"
    if payload.get("kind") == "mailbox_paused":
        return f"Mailbox {payload.get('mailbox')} paused: nothing is sent from it"
    lead = payload.get("lead") or {}
    who = lead.get("name") or lead.get("email") or "a lead"
    what = payload.get("intent_label") or str(payload.get("kind") or "").replace("_", " ")
    return f"{payload.get('product')}: {who} <{lead.get('email')}> — {what}"


def summary_text(payload: dict[str, Any]) -> str:
    """The plain-text notice every channel carries: enough to act without opening anything."""
    if "inbound_id" in payload and "thread" not in payload:
        return _inbound_text(payload)
    if payload.get("kind") == "mailbox_paused":
        return "\n".join(
            [
                headline(payload),
                f"Campaigns: {', '.join(payload.get('campaigns') or []) or '-'}",
                f"Why: {payload.get('reason') or '-'}",
                f"Next step: {payload.get('recommendation')}",
            ]
        )
    thread = payload.get("thread") or {}
    lines = [
        headline(payload),
        f"Campaign: {', '.join(payload.get('campaigns') or []) or '-'}",
        f"Subject: {payload.get('subject') or '-'}",
        f"Next step: {payload.get('recommended_next_step')}",
    ]
    if payload.get("crossed"):
        lines.append("Crossed: one of our emails went out as they replied.")
    for other in payload.get("other_active_products") or []:
        lines.append(
            f"Also a lead of {other['product']} ({other['state']}), "
            + (f"next email {other['next_step_at']}" if other.get("next_step_at") else "nothing queued")
        )
    if payload.get("text"):
        lines += ["", str(payload["text"])[:2000]]
    lines += ["", f"Thread {thread.get('id')}: {thread.get('url')}"]
    return "\n".join(lines)


def _inbound_text(payload: dict[str, Any]) -> str:
    """A message kept for a person that concerns no lead (quarantined, refused at the door)."""
    return "\n".join(
        [
            headline(payload),
            f"Source: {payload.get('source')}; Message-ID: {payload.get('message_id') or '-'}",
            f"Why: {payload.get('error') or '-'}",
            f"Next step: {payload.get('recommendation')}",
            "See `replyguard inbound list`; `replyguard inbound retry ID` once the cause is fixed.",
        ]
    )
