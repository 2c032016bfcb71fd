"""A person's decisions on a rescue thread. Each is one transaction and one `thread_decision`
event with who and when; the state machines in domain/states.py check every move.

UI-agnostic: called by the CLI (`threads resolve|assign|snooze|done`) and, later, the web. They
return plain dataclasses and raise `DecisionError` (a decision that does not apply) or
`ThreadNotFound` — never anything HTTP. Every query is scoped to the unit of work's workspace.

Only a person's decision ever returns a lead to sending; none of them sends an email (a
person's answer is `person_send.send_reply`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.intent import Intent
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import IllegalTransition, ReplyState, StepState, ThreadState, check_thread_move
from replyguard.domain.thread_actions import refusal
from replyguard.service_layer.inbound.replies import cancel_queued_steps, pause_steps
from replyguard.service_layer.rescue import decisions_holds as holds
from replyguard.service_layer.rescue import thread_versions
from replyguard.service_layer.rescue.decision_base import (
    DecisionError,
    DecisionResult,
    Request,
    ThreadNotFound,
    close,
    get_thread,
    lead_of,
    move_lead,
    planned_text,
    start_of,
)
from replyguard.service_layer.rescue.replan import revive_and_replan
from replyguard.service_layer.rescue.thread_context import load_context, thread_facts
from replyguard.service_layer.rescue.thread_versions import VersionChanged
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.accounts import AccountError, workspace_member
from replyguard.settings import Settings

__all__ = [
    "DecisionError",
    "DecisionResult",
    "Request",
    "ThreadNotFound",
    "VersionChanged",
    "decide",
    "get_thread",
    "known_actions",
]


def decide(uow: UnitOfWork, thread_id: int, request: Request, settings: Settings) -> DecisionResult:
    """Apply one decision. The caller commits."""
    if not request.by.strip():
        raise DecisionError("a decision needs the name of the person who takes it")
    handler = _HANDLERS.get(request.action)
    if handler is None:
        raise DecisionError(f"unknown action {request.action!r}; one of {', '.join(sorted(_HANDLERS))}")
    thread = get_thread(uow, thread_id)
    uow.lock_leads([thread.lead_id, *(c["lead_id"] for c in thread.candidates or [])])
    uow.session.refresh(thread)
    # Under the lead lock, in this transaction: what the person saw is still what is there,
    # and the action is one the thread offers now (the one rule, domain/thread_actions.py).
    thread_versions.check_seen(uow.session, uow.workspace_id, thread.id, request.seen)
    context = load_context(uow.session, uow.workspace_id, thread.lead_id)
    facts = thread_facts(uow.session, thread, context, uow.clock.now(), settings=settings)
    why = refusal(facts, request.action)
    if why is not None:
        raise DecisionError(why)
    try:
        result = handler(uow, thread, request, settings)
    except IllegalTransition as exc:
        raise DecisionError(str(exc)) from exc
    thread.updated_at = uow.clock.now()
    thread_versions.bump(
        uow.session,
        workspace_id=uow.workspace_id,
        now=uow.clock.now(),
        lead_id=thread.lead_id,
        thread_id=thread.id,
        kind="decision",
        by=request.by,
        summary=f"{request.action.replace('_', ' ')}: {result.message}",
    )
    result.version = thread_versions.current(uow.session, uow.workspace_id, thread.id)
    uow.add_event(
        "thread_decision",
        lead_id=thread.lead_id,
        thread_id=thread.id,
        action=request.action,
        by=request.by,
        message=result.message,
        planned=[p.to_json() for p in result.planned],
    )
    return result


def _resume(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    lead = lead_of(uow, thread.lead_id)
    unknown = uow.session.scalar(
        select(m.Step.id).where(m.Step.lead_id == lead.id, m.Step.state == StepState.UNKNOWN).limit(1)
    )
    if unknown is not None:
        raise DecisionError("a send's outcome is unknown: resolve it first (sent, not_sent, send_again)")
    move_lead(uow, lead, ReplyState.ACTIVE, r.by, "resumed from the thread")
    planned = revive_and_replan(uow, lead.id, uow.clock.now())
    return DecisionResult(thread.id, r.action, f"resumed; {planned_text(planned)}", lead.reply_state, planned)


def _restart(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """Send again to a lead a person stopped: its own action (and its own confirmation at the
    entry points), never a plain resume."""
    if not r.confirmed:
        raise DecisionError("restart sends again to a lead a person stopped: confirm it (--yes)")
    lead = lead_of(uow, thread.lead_id)
    if lead.reply_state != ReplyState.STOPPED:
        raise DecisionError(f"restart is for a stopped lead; this one is {lead.reply_state}")
    result = _resume(uow, thread, r, s)
    result.message = result.message.replace("resumed", "restarted", 1)
    return result


def _stop(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    lead = lead_of(uow, thread.lead_id)
    move_lead(uow, lead, ReplyState.STOPPED, r.by, "stopped from the thread")
    cancelled, _ = cancel_queued_steps(uow, lead.id, reason="stopped by a person")
    return DecisionResult(
        thread.id, r.action, f"stopped; {cancelled} queued steps cancelled", lead.reply_state
    )


def _pause_until(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """Take it for an absence (or a "later"): the sequence waits until the date and then goes
    on by itself. An absence pauses every product of the person; a "later" only this one."""
    if r.until is None or r.until <= uow.clock.now().date():
        raise DecisionError("pause_until needs a date after today (--until YYYY-MM-DD)")
    lead = lead_of(uow, thread.lead_id)
    until = start_of(uow, lead, r.until)
    move_lead(uow, lead, ReplyState.OUT_OF_OFFICE, r.by, f"paused until {r.until}")
    lead.paused_until = until
    planned = revive_and_replan(uow, lead.id, until)
    absence = thread.kind == ThreadKind.LONG_ABSENCE or thread.intent == Intent.OUT_OF_OFFICE
    paused_others = _pause_other_products(uow, lead, until, r.by) if absence else []
    extra = f"; also paused: {', '.join(paused_others)}" if paused_others else ""
    return DecisionResult(
        thread.id,
        r.action,
        f"paused until {r.until}; {planned_text(planned)}{extra}",
        lead.reply_state,
        planned,
    )


def _pause_other_products(uow: UnitOfWork, lead: m.Lead, until: datetime, by: str) -> list[str]:
    paused = []
    others = uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(
            m.Lead.contact_id == lead.contact_id,
            m.Lead.id != lead.id,
            m.Lead.workspace_id == uow.workspace_id,
            m.Lead.reply_state.in_([ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE]),
        )
        .order_by(m.Lead.id)
    ).all()
    uow.lock_leads([other.id for other, _ in others])
    for other, product in others:
        move_lead(uow, other, ReplyState.OUT_OF_OFFICE, by, "the person is away")
        other.paused_until = max(other.paused_until or until, until)
        pause_steps(uow, other, other.paused_until)
        paused.append(product)
    return paused


def _pause_others(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """Pause the lead's other live products: their steps wait until the date (by default the
    default pause), then go on by themselves. Nothing is cancelled."""
    lead = lead_of(uow, thread.lead_id)
    day = r.until or (uow.clock.now() + s.default_pause).date()
    until = start_of(uow, lead, day)
    others = uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(
            m.Lead.contact_id == lead.contact_id,
            m.Lead.id != lead.id,
            m.Lead.workspace_id == uow.workspace_id,
            m.Lead.reply_state == ReplyState.ACTIVE,
        )
    ).all()
    uow.lock_leads([o.id for o, _ in others])
    for other, product in others:
        other.paused_until = until
        moved = pause_steps(uow, other, until)
        uow.add_event(
            "lead_paused", lead_id=other.id, until=until.isoformat(), by=r.by, steps=moved, product=product
        )
    thread.intent_data = {**(thread.intent_data or {}), "others_decided": "paused"}
    names = ", ".join(p for _, p in others) or "no other live product"
    return DecisionResult(thread.id, r.action, f"paused until {day}: {names}", lead.reply_state)


def _leave_others(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    thread.intent_data = {**(thread.intent_data or {}), "others_decided": "left running"}
    return DecisionResult(thread.id, r.action, "the other products keep running", None)


def _not_a_reply(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """The message was not a person answering: the lead goes back to the state the reply found
    and its sequence is brought back and re-planned."""
    if thread.kind != ThreadKind.HUMAN_REPLY:
        raise DecisionError("only a thread opened by a human reply can be marked 'not a reply'")
    lead = lead_of(uow, thread.lead_id)
    if lead.reply_state != ReplyState.REPLIED:
        raise DecisionError(f"the lead is {lead.reply_state} now, not replied: nothing to undo")
    now = uow.clock.now()
    target = ReplyState(thread.state_before or ReplyState.ACTIVE)
    if target is ReplyState.OUT_OF_OFFICE and (lead.paused_until is None or lead.paused_until <= now):
        target = ReplyState.ACTIVE
    if target not in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE, ReplyState.HELD):
        target = ReplyState.STOPPED
    paused = lead.paused_until
    move_lead(uow, lead, target, r.by, "not a reply")
    start = paused if target is ReplyState.OUT_OF_OFFICE and paused else now
    lead.paused_until = paused if target is ReplyState.OUT_OF_OFFICE else None
    planned = revive_and_replan(uow, lead.id, start) if target is not ReplyState.STOPPED else []
    close(thread)
    return DecisionResult(thread.id, r.action, f"back to {target}; {planned_text(planned)}", target, planned)


def _assign(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    if not r.to or not r.to.strip():
        raise DecisionError("assign needs a person (--to EMAIL of a user of the workspace)")
    try:
        thread.assignee = workspace_member(uow, r.to)  # a user of this workspace, never any text
    except AccountError as exc:
        raise DecisionError(str(exc)) from None
    return DecisionResult(thread.id, r.action, f"assigned to {thread.assignee}")


def _snooze(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    if r.until_at is None or r.until_at <= uow.clock.now():
        raise DecisionError("snooze needs a time in the future (--until)")
    check_thread_move(ThreadState(thread.state), ThreadState.SNOOZED)
    thread.state, thread.snoozed_until = ThreadState.SNOOZED, r.until_at
    return DecisionResult(thread.id, r.action, f"snoozed until {r.until_at:%Y-%m-%d %H:%M} UTC")


def _done(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    close(thread)
    return DecisionResult(thread.id, r.action, "done")


def _reopen(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    check_thread_move(ThreadState(thread.state), ThreadState.OPEN)
    thread.state, thread.snoozed_until = ThreadState.OPEN, None
    return DecisionResult(thread.id, r.action, "open again")


Handler = Callable[[UnitOfWork, m.RescueThread, Request, Settings], DecisionResult]


_HANDLERS: dict[str, Handler] = {
    "resume": _resume,
    "restart": _restart,
    "stop": _stop,
    "pause_until": _pause_until,
    "pause_others": _pause_others,
    "leave_others": _leave_others,
    "not_a_reply": _not_a_reply,
    "assign": _assign,
    "snooze": _snooze,
    "done": _done,
    "reopen": _reopen,
    "confirm": holds.confirm,
    "reject": holds.reject,
    "sent": holds.it_was_sent,
    "not_sent": holds.it_was_not_sent,
    "send_again": holds.send_again,
    "confirm_sender": holds.confirm_sender,
    "reject_sender": holds.reject_sender,
    "resend_step": holds.resend_step,
    "skip_step": holds.skip_step,
}


def known_actions() -> frozenset[str]:
    """Every decision's name (an unknown one is a typing mistake, not a refusal)."""
    return frozenset(_HANDLERS)
