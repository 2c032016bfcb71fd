"""What may be decided on a thread: the one rule behind the page's buttons, the API's `actions`
and the command line. Pure: a function of the thread's and its lead's state.

`offered(facts)` lists the actions in the order to show them (the recommended ones first, with
`pause_until:DATE` carrying its date); `refusal(facts, action)` says why an action that is not
offered may not be taken now. Every decision and every answer is checked against it, under the
lead lock, in the transaction that acts (`service_layer/rescue/decisions.py`, `person_send.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import ReplyState

#: Actions that let an email go out (a step, or a person's answer): they are taken only on a
#: version the person saw.
SENDS = frozenset(
    {"resume", "restart", "send_again", "resend_step", "not_a_reply", "reject", "send_reply", "send_another"}
)
#: Kept on a thread whatever its kind, while it is not done.
_ALWAYS = ("assign", "snooze", "done")
#: A lead in this state is never written to again by this system.
_CLOSED = frozenset({ReplyState.UNSUBSCRIBED})
#: Nothing a person writes may go to a lead in one of these.
_UNANSWERABLE = frozenset({ReplyState.UNSUBSCRIBED, ReplyState.BOUNCED})
#: A lead a person may send the sequence on from (resume); a stopped one needs a restart.
_RESUMABLE = frozenset({ReplyState.REPLIED, ReplyState.HELD, ReplyState.OUT_OF_OFFICE})
_STOPPABLE = frozenset(
    {ReplyState.ACTIVE, ReplyState.REPLIED, ReplyState.HELD, ReplyState.OUT_OF_OFFICE, ReplyState.BOUNCED}
)
_ANSWERABLE = frozenset(
    {
        ThreadKind.HUMAN_REPLY,
        ThreadKind.LEFT_COMPANY,
        ThreadKind.THREAD_TAKEN,
        ThreadKind.CONFIRM_SENDER,
        ThreadKind.LONG_ABSENCE,
    }
)
_PAUSABLE = frozenset({ThreadKind.HUMAN_REPLY, ThreadKind.LONG_ABSENCE, ThreadKind.THREAD_TAKEN})
_KIND_ACTIONS: dict[ThreadKind, tuple[str, ...]] = {
    ThreadKind.PROBABLE_REPLY: ("confirm", "reject"),
    ThreadKind.UNKNOWN_OUTCOME: ("sent", "send_again", "not_sent"),
    ThreadKind.STEP_FAILED: ("resend_step", "skip_step"),
    ThreadKind.RENDER_FAILED: ("skip_step",),
    ThreadKind.CONFIRM_SENDER: ("confirm_sender", "reject_sender"),
}


@dataclass(frozen=True, slots=True)
class ThreadFacts:
    kind: ThreadKind
    thread_state: str  # open | snoozed | done (as it is now: a snooze that ended is open)
    lead_state: ReplyState
    recommended: tuple[str, ...] = ()  # next_step.recommend's actions, in its order
    waiting_on_them: bool = False  # a person answered after their last message
    unknown_outcome: bool = False  # a step of the lead has an unknown outcome


def _name(action: str) -> str:
    return action.partition(":")[0]


def _lead_moves(f: ThreadFacts) -> list[str]:
    if f.kind in (ThreadKind.PROBABLE_REPLY, ThreadKind.UNSUBSCRIBE) or f.lead_state in _CLOSED:
        return ["stop"] if f.lead_state in _STOPPABLE else []
    moves = []
    # A bounced lead is sent to again only from the bounce's own thread: the contact has
    # another address to write to.
    resumable = _RESUMABLE | ({ReplyState.BOUNCED} if f.kind is ThreadKind.BOUNCE else set())
    if f.lead_state in resumable and not f.unknown_outcome:
        moves.append("resume")
    if f.lead_state is ReplyState.STOPPED and not f.unknown_outcome:
        moves.append("restart")
    if f.lead_state in _STOPPABLE:
        moves.append("stop")
    if f.kind is ThreadKind.HUMAN_REPLY and f.lead_state is ReplyState.REPLIED:
        moves.append("not_a_reply")
    return moves


def offered(f: ThreadFacts) -> tuple[str, ...]:
    """Every action that may be taken on the thread now, recommended ones first."""
    if f.thread_state == "done":
        return ("reopen", "assign")
    possible = set(_lead_moves(f)) | set(_KIND_ACTIONS.get(f.kind, ())) | set(_ALWAYS)
    if f.kind in _ANSWERABLE and f.lead_state not in _UNANSWERABLE:
        possible.add("send_another" if f.waiting_on_them else "send_reply")
    if f.kind in _PAUSABLE and f.lead_state in _RESUMABLE:
        possible.add("pause_until")
    if f.unknown_outcome:
        possible |= {"sent", "send_again", "not_sent"}
    possible |= {_name(a) for a in f.recommended if _name(a) in ("pause_others", "leave_others")}
    if f.thread_state == "snoozed":
        possible.add("reopen")
    found: list[str] = []
    for action in f.recommended:
        name = _name(action)
        if name in possible:
            found.append(action)
        elif name == "resume" and "restart" in possible:
            found.append("restart")
        elif name == "send_reply" and "send_another" in possible:
            found.append("send_another")
    for action in (*sorted(possible - {"assign", "snooze", "done", "reopen"}), "reopen", *_ALWAYS):
        if action in possible and action not in {_name(a) for a in found}:
            found.append(action)
    return tuple(dict.fromkeys(found))


def refusal(f: ThreadFacts, action: str) -> str | None:
    """None when `action` may be taken now, else why not (a sentence for the person)."""
    name = _name(action)
    if name in {_name(a) for a in offered(f)}:
        return None
    if f.thread_state == "done":
        return "the thread is done: reopen it first"
    if name in ("confirm", "reject") and f.kind is not ThreadKind.PROBABLE_REPLY:
        return "confirm and reject apply to an open probable-reply thread"
    if name == "resume" and f.lead_state is ReplyState.STOPPED:
        return "the lead was stopped: sending again is a restart (--action restart), confirmed on its own"
    if name in ("resume", "restart") and f.unknown_outcome:
        return "a send's outcome is unknown: resolve it first (sent, not_sent, send_again)"
    if name in ("resume", "restart") and f.lead_state is ReplyState.ACTIVE:
        return "the lead is already sending (active): nothing to resume"
    if name in ("send_reply", "send_another") and f.lead_state in _UNANSWERABLE:
        return f"the lead is {f.lead_state}; nothing may be sent to it"
    if name == "send_reply" and f.waiting_on_them:
        return "already answered: the thread waits on them (send another only on purpose)"
    if f.lead_state in _CLOSED:
        return f"the lead is {f.lead_state}: {name.replace('_', ' ')} does not apply"
    offered_now = ", ".join(_name(a) for a in offered(f))
    return (
        f"{name.replace('_', ' ')} does not apply to this {f.kind.value.replace('_', ' ')} thread "
        f"with the lead {f.lead_state} (offered now: {offered_now})"
    )
