"""The decisions a thread page offers: each action of `service_layer/rescue/decisions.py` with its
label, what it does in a sentence, and the one argument it needs. The thread's own `actions`
(recomputed from its lead, `thread_context.next_step_for`) choose which are shown."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from replyguard.domain.schedule import ScheduleError, load_zone
from replyguard.service_layer.rescue.decision_base import Request


@dataclass(frozen=True, slots=True)
class ActionForm:
    action: str  # the name `decisions.decide` takes
    label: str
    explain: str
    style: str = ""  # "primary" for the recommended kind of move, "danger" for a final one
    #: "" | "date" | "candidate" | "unknown_step" | "confirmation" | "sure" (a box to tick that
    #: says `confirm`: the confirmation works without JavaScript; the server never reads it)
    needs: str = ""
    fixed_date: date | None = None  # pause_until:DATE carries its own date
    confirm: str = ""  # what a move that cannot be undone asks (a dialog, or the box of "sure")


_FORMS: dict[str, ActionForm] = {
    "resume": ActionForm(
        "resume",
        "Resume the sequence",
        "The remaining emails are re-planned from now, inside the send window, keeping their waits.",
        "primary",
    ),
    "restart": ActionForm(
        "restart",
        "Restart the sequence",
        "A person stopped this lead: its remaining emails are planned again from now. Only if "
        "they asked for it.",
        "danger",
        needs="confirmation",
        confirm="This lead was stopped. Send its sequence again?",
    ),
    "stop": ActionForm(
        "stop",
        "Stop",
        "No more emails in this product: its queued steps are cancelled.",
        "danger",
        needs="sure",
        confirm="Yes: no more emails to this lead in this product",
    ),
    "pause_until": ActionForm(
        "pause_until",
        "Pause until",
        "The sequence waits until the date, then goes on by itself; an absence pauses every "
        "product of the person.",
        "primary",
        needs="date",
    ),
    "not_a_reply": ActionForm(
        "not_a_reply",
        "Not a reply",
        "The lead goes back to where it was before the message, and its sequence is re-planned.",
    ),
    "confirm": ActionForm(
        "confirm",
        "Confirm",
        "It becomes this lead's reply: the sequence stops and the reply gets its own thread; "
        "the other candidates are released.",
        "primary",
        needs="candidate",
    ),
    "reject": ActionForm(
        "reject",
        "Reject",
        "It answers none of them: every held lead sends again; the message stays kept as unmatched.",
    ),
    "sent": ActionForm(
        "sent",
        "It was sent",
        "It reached them: recorded as sent, and the sequence goes on after it.",
        needs="unknown_step",
    ),
    "send_again": ActionForm(
        "send_again",
        "Send it again",
        "It did not go out: queued again now, with the same send key.",
        "primary",
        needs="unknown_step",
    ),
    "not_sent": ActionForm(
        "not_sent",
        "It was not sent: drop it",
        "Dropped for good; the sequence goes on without it.",
        needs="unknown_step",
    ),
    "confirm_sender": ActionForm(
        "confirm_sender",
        "Confirm the sender",
        "The message is genuine: what it asks applies (address learned, unsubscribe, bounce, pause).",
    ),
    "reject_sender": ActionForm(
        "reject_sender",
        "Reject the sender",
        "Nothing is learned or unsubscribed; the lead stays stopped.",
    ),
    "resend_step": ActionForm(
        "resend_step",
        "Resend the email",
        "The same email is tried again (same Message-ID: it never arrived); its retries start over.",
        "primary",
    ),
    "skip_step": ActionForm(
        "skip_step",
        "Skip it",
        "Go on without it: the next email starts the thread if this one was the first.",
    ),
}
#: Shown in their own places on the page: the other products, and assign/snooze/done.
ELSEWHERE = frozenset({"pause_others", "leave_others", "done", "reopen", "assign", "snooze"})
ALL_ACTIONS = frozenset(_FORMS) | ELSEWHERE
#: Decisions that say until when: refused without a date (never a silent default).
DATED = frozenset({"pause_until", "pause_others", "snooze"})


def forms_for(actions: list[str]) -> list[ActionForm]:
    """The forms for a thread's actions, in its order (`pause_until:DATE` carries its date)."""
    found = []
    for action in actions:
        name, _, argument = action.partition(":")
        if name in ELSEWHERE or name not in _FORMS:
            continue
        form = _FORMS[name]
        if argument:
            try:
                fixed = date.fromisoformat(argument)
            except ValueError:
                fixed = None
            form = ActionForm(
                form.action, form.label, form.explain, form.style, form.needs, fixed, form.confirm
            )
        found.append(form)
    return found


#: How far ahead a pause or a snooze may reach: further is a typing mistake, not a plan (and
#: dates near the year 9999 would overflow the planner's arithmetic).
FURTHEST = timedelta(days=3 * 366)


class BadDecision(ValueError):
    """A decision's arguments cannot be read (the message says which and why)."""


def decision_request(
    action: str,
    by: str,
    now: datetime,
    *,
    until: date | str | None = None,
    until_at: datetime | str | None = None,
    to: str | None = None,
    lead: str | None = None,
    step_id: int | str | None = None,
    seen: int | None = None,
    confirmed: bool = False,
    zone: str | None = None,
) -> Request:
    """A `decisions.Request` from what a form or an API body carried, checked at the edge.

    Dates are days where the person is (the service makes them midnight in their zone);
    `until_at` without an offset is a time in `zone` (an IANA name, as the form's label says
    it), UTC when none is given. Raises BadDecision.
    """
    name = action.strip().replace("-", "_")
    if name not in ALL_ACTIONS:
        raise BadDecision(f"unknown action {action[:40]!r}")
    day = _day(until) if until not in (None, "") else None
    when = _instant(until_at, _zone(zone)) if until_at not in (None, "") else None
    if name in DATED and day is None and when is None:
        # A pause with no date used to mean "a week" without saying so: the person names it.
        raise BadDecision(f"{name.replace('_', ' ')} needs a date")
    if day is not None and not now.date() <= day <= (now + FURTHEST).date():
        raise BadDecision("the date must be from today to three years from now")
    if when is not None and not now <= when <= now + FURTHEST:
        raise BadDecision("the time must be from now to three years from now")
    step = None
    if step_id not in (None, ""):
        try:
            step = int(step_id)
        except ValueError:
            raise BadDecision("the step must be a number") from None
    return Request(
        action=name,
        by=by,
        until=day,
        until_at=when,
        to=(to or "").strip()[:320] or None,
        lead=(lead or "").strip()[:320] or None,
        step_id=step,
        seen=seen,
        confirmed=confirmed,
    )


def _day(value: date | str | None) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise BadDecision(f"not a date like 2026-12-24: {str(value)[:40]!r}") from None


def _zone(name: str | None) -> tzinfo:
    if not name or not name.strip():
        return UTC
    try:
        return load_zone(name.strip())
    except ScheduleError:
        raise BadDecision(f"unknown time zone {name.strip()[:60]!r}") from None


def _instant(value: datetime | str | None, zone: tzinfo = UTC) -> datetime:
    if isinstance(value, datetime):
        found = value
    else:
        try:
            text = str(value).strip().removesuffix("UTC").strip().replace("Z", "+00:00")
            found = datetime.fromisoformat(text)
        except ValueError:
            raise BadDecision(f"not a time like 2026-12-24T09:00: {str(value)[:40]!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=zone)
