"""The recommended next step of a rescue thread: one sentence a person can act on, and the
one-click decisions that fit it. Pure: a function of what the thread knows.

Actions are the names of `service_layer/rescue/decisions.py` (`pause_until:YYYY-MM-DD` carries its
date). Nothing here acts: a person chooses.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from replyguard.domain.intent import Intent, IntentResult


class ThreadKind(enum.StrEnum):
    """Why a thread waits for a person."""

    HUMAN_REPLY = "human_reply"
    UNSUBSCRIBE = "unsubscribe"
    LONG_ABSENCE = "out_of_office"  # away for longer than the pause limit: the lead is held
    LEFT_COMPANY = "left_company"
    BOUNCE = "bounce_hard"  # the address bounced; the contact has another one
    PROBABLE_REPLY = "probable_reply"
    UNKNOWN_OUTCOME = "unknown_outcome"
    #: An email of the sequence was refused for good (5xx, or retries ran out): nothing after
    #: it goes out until a person resends it, skips it or stops the lead.
    STEP_FAILED = "step_failed"
    #: The lead's emails can no longer be rendered (data or campaign changed).
    RENDER_FAILED = "render_failed"
    #: Another of our leads answered in this lead's thread: this one is held.
    THREAD_TAKEN = "thread_taken"
    #: A sender we cannot tie to the lead wrote in her thread: the lead is stopped, and what
    #: only she may ask (learn the address, unsubscribe) waits for a person's confirmation.
    CONFIRM_SENDER = "confirm_sender"


#: How long before a reply arrived one of our emails may have gone out and crossed it.
CROSSED_WINDOW = timedelta(minutes=30)


def is_crossed(sent_times: list[datetime], received_at: datetime) -> bool:
    """True when one of our emails went out shortly before the reply arrived (or after it:
    a send that was already under way). The person did not see it when they wrote."""
    return any(sent >= received_at - CROSSED_WINDOW for sent in sent_times)


@dataclass(frozen=True, slots=True)
class OtherProduct:
    product: str
    state: str
    next_step_at: datetime | None = None
    next_subject: str | None = None

    def describe(self) -> str:
        when = f", next email {self.next_step_at:%d %b}" if self.next_step_at else ", nothing queued"
        return f"{self.product} ({self.state}{when})"


@dataclass(frozen=True, slots=True)
class Situation:
    kind: ThreadKind
    intent: IntentResult | None
    now: datetime
    lead_state: str
    crossed: bool = False
    contact: str = ""  # "Priya Raman <priya@...>"
    company: str = ""
    new_contact: str | None = None
    absent_until: date | None = None
    subject: str | None = None
    sender: str | None = None  # who wrote, when it is not the lead (a colleague, a stranger)
    other_products: tuple[OtherProduct, ...] = ()
    default_pause: timedelta = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class NextStep:
    text: str
    actions: tuple[str, ...]


def recommend(s: Situation) -> NextStep:
    """The next step for `s`: the main advice first, then what concerns the other products."""
    main = _main(s)
    text, actions = main.text, list(main.actions)
    if s.crossed and s.kind is ThreadKind.HUMAN_REPLY:
        text = f"Apologise: our follow-up crossed their reply. {text}"
    active = [p for p in s.other_products if p.state in ("active", "out_of_office")]
    if active and s.kind in (ThreadKind.HUMAN_REPLY, ThreadKind.UNKNOWN_OUTCOME):
        listed = "; ".join(p.describe() for p in active)
        text += f" Also a lead of {listed}: pause it or leave it running."
        actions += ["pause_others", "leave_others"]
    return NextStep(text, tuple(dict.fromkeys([*actions, "done"])))


def _main(s: Situation) -> NextStep:
    if s.kind is ThreadKind.PROBABLE_REPLY:
        return NextStep(
            "Confirm which lead this answers, or reject it; the held leads send nothing meanwhile.",
            ("confirm", "reject"),
        )
    if s.kind is ThreadKind.UNKNOWN_OUTCOME:
        what = f"'{s.subject}'" if s.subject else "the last email"
        return NextStep(
            f"Check whether {what} reached {s.contact}: mark it sent, or not sent (send again or drop).",
            ("sent", "send_again", "not_sent"),
        )
    if s.kind is ThreadKind.LEFT_COMPANY:
        if s.new_contact:
            return NextStep(f"Write to {s.new_contact}: {s.contact} has left.", ("stop", "resume"))
        return NextStep(f"Find the right contact at {s.company or 'this company'}, or stop.", ("stop",))
    if s.kind is ThreadKind.LONG_ABSENCE:
        until = s.absent_until or (s.now + s.default_pause).date()
        return NextStep(
            f"Away until {until:%d %b %Y}, longer than the pause limit: pause until then, or stop.",
            (f"pause_until:{until.isoformat()}", "stop"),
        )
    if s.kind is ThreadKind.STEP_FAILED:
        what = f"'{s.subject}'" if s.subject else "an email of the sequence"
        return NextStep(
            f"{what} never reached {s.contact or 'the lead'}: resend it, skip it (the next email "
            "then starts the thread), or stop the lead.",
            ("resend_step", "skip_step", "stop"),
        )
    if s.kind is ThreadKind.RENDER_FAILED:
        return NextStep(
            "The emails can no longer be written for this lead: fix the lead's data or the "
            "campaign, or skip the step, or stop.",
            ("skip_step", "stop"),
        )
    if s.kind is ThreadKind.THREAD_TAKEN:
        who = s.sender or "another of our leads"
        return NextStep(
            f"{who} answered in this thread: resume {s.contact or 'this lead'}, or stop if the "
            "conversation now runs with them.",
            ("resume", "stop"),
        )
    if s.kind is ThreadKind.CONFIRM_SENDER:
        answer = _for_intent(s)
        who = s.sender or "a sender we do not know"
        return NextStep(
            f"{who} wrote about {s.contact or 'this lead'} without the proof its effect needs; "
            f"nothing is sent meanwhile. Confirm only if the message is genuine (what it asks "
            f"then applies: the address learned, an unsubscribe, a bounce, a pause), else "
            f"reject. {answer.text}",
            ("confirm_sender", "reject_sender", *answer.actions),
        )
    if s.kind is ThreadKind.BOUNCE:
        return NextStep("The address bounced: write to their other address, or stop.", ("resume", "stop"))
    if s.kind is ThreadKind.UNSUBSCRIBE:
        return NextStep("Close; no more outreach. The address is suppressed in every product.", ())
    return _for_intent(s)


def _for_intent(s: Situation) -> NextStep:
    result = s.intent or IntentResult(Intent.OTHER)
    send = ("send_reply",)
    match result.intent:
        case Intent.INTERESTED:
            return NextStep("Propose two times this week.", (*send, "stop"))
        case Intent.QUESTION:
            what = "the pricing question" if result.pricing else "their question"
            return NextStep(f"Answer {what}.", (*send, "resume", "stop"))
        case Intent.REFERRAL:
            who = _person(result.referral_name, result.referral_address)
            return NextStep(f"Write to {who}: they were referred.", (*send, "stop"))
        case Intent.LATER:
            if result.date:
                return NextStep(
                    f"Nothing until {result.date:%d %b}; pause until then and the sequence resumes itself.",
                    (f"pause_until:{result.date.isoformat()}", *send, "stop"),
                )
            return NextStep("Not now: thank them and stop, or pause until a date.", (*send, "stop"))
        case Intent.NOT_INTERESTED:
            return NextStep("Close; no more outreach.", ("stop", *send))
        case Intent.UNSUBSCRIBE:
            return NextStep("Stop and suppress: they asked for no more email.", ("stop",))
        case Intent.WRONG_PERSON:
            return NextStep(
                f"Ask who owns this at {s.company or 'their company'}, then stop this lead.", (*send, "stop")
            )
        case Intent.OUT_OF_OFFICE:
            until = result.date or (s.now + s.default_pause).date()
            return NextStep(
                f"Looks like an out-of-office: pause until {until:%d %b %Y}; the sequence resumes itself.",
                (f"pause_until:{until.isoformat()}", "not_a_reply", "stop"),
            )
    return NextStep("Read the reply and answer it yourself.", (*send, "resume", "stop", "not_a_reply"))


def _person(name: str | None, address: str | None) -> str:
    if name and address:
        return f"{name} <{address}>"
    return address or name or "the person they named"
