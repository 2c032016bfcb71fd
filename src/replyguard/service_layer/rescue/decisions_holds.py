"""Decisions that clear a hold: a probable reply (confirm / reject) and a send whose outcome is
unknown (it was sent / it was not / send it again). Called through `decisions.decide`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import Actor, ReplyKind, ReplyState, StepState
from replyguard.service_layer.inbound import confirmations
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.rescue import step_decisions
from replyguard.service_layer.rescue.actions import resolve_unknown
from replyguard.service_layer.rescue.decision_base import (
    DecisionError,
    DecisionResult,
    Request,
    close,
    lead_of,
    move_lead,
    planned_text,
)
from replyguard.service_layer.rescue.replan import replan_lead
from replyguard.service_layer.steps import put_back
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.leads import contact_for_address
from replyguard.settings import Settings


def _probable(thread: m.RescueThread) -> list[dict[str, Any]]:
    if thread.kind != ThreadKind.PROBABLE_REPLY or thread.state == "done":
        raise DecisionError("confirm and reject apply to an open probable-reply thread")
    return list(thread.candidates or [])


def _release(uow: UnitOfWork, candidate: dict[str, Any], by: str) -> None:
    """Undo this message's hold on a candidate: back to the state it had, steps re-planned."""
    lead = lead_of(uow, int(candidate["lead_id"]))
    if not candidate.get("held") or lead.reply_state != ReplyState.HELD:
        return  # not held by this message, or something stronger happened since
    move_lead(uow, lead, ReplyState(candidate["state"]), by, "probable reply decided")
    replan_lead(uow, lead.id, max(uow.clock.now(), lead.paused_until or uow.clock.now()))


def confirm(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """The message answers this lead: it becomes that lead's reply, through the reply
    transaction (the sequence stops, a thread opens); every other candidate is released."""
    candidates = _probable(thread)
    chosen = _chosen(uow, candidates, r.lead)
    for candidate in candidates:
        _release(uow, candidate, r.by)
    inbound = uow.session.get_one(m.InboundMessage, thread.inbound_message_id)
    kind = ReplyKind(inbound.kind) if inbound.kind else ReplyKind.HUMAN_REPLY
    outcome = record_reply(
        uow,
        int(chosen["lead_id"]),
        IncomingReply(
            kind=kind,
            received_at=inbound.received_at,
            text=thread.text,
            subject=thread.subject,
            from_address=(thread.intent_data or {}).get("sender"),
            evidence=(*(thread.evidence or []), f"person:confirmed-by:{r.by}"),
            source="person",
            inbound_message_id=inbound.id,
        ),
        s,
    )
    inbound.status, inbound.lead_id = "matched", int(chosen["lead_id"])
    thread.intent_data = {**(thread.intent_data or {}), "resolution": f"confirmed for {chosen['email']}"}
    close(thread)
    return DecisionResult(
        thread.id,
        r.action,
        f"confirmed as the reply of {chosen['email']} ({chosen['product']}); thread {outcome.thread_id}",
        outcome.lead_state,
        new_thread_id=outcome.thread_id,
    )


def _chosen(uow: UnitOfWork, candidates: list[dict[str, Any]], which: str | None) -> dict[str, Any]:
    """The candidate a person named: by lead id, or by email when that names one candidate."""
    listed = ", ".join(f"lead {c['lead_id']}: {c['email']} ({c['product']})" for c in candidates)
    if which is None:
        if len(candidates) != 1:
            raise DecisionError(f"several candidates, say which (--lead ID or EMAIL): {listed}")
        return candidates[0]
    if which.isdigit():
        found = [c for c in candidates if int(c["lead_id"]) == int(which)]
    else:
        contact = contact_for_address(uow, which)
        lead_ids = set(
            uow.session.scalars(select(m.Lead.id).where(m.Lead.contact_id == contact.id)) if contact else []
        )
        found = [c for c in candidates if int(c["lead_id"]) in lead_ids]
    if len(found) != 1:
        raise DecisionError(f"{which} does not name one candidate; candidates: {listed}")
    return found[0]


def reject(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """The message answers none of them: every hold it caused is lifted; it stays kept."""
    for candidate in _probable(thread):
        _release(uow, candidate, r.by)
    if thread.inbound_message_id is not None:
        inbound = uow.session.get_one(m.InboundMessage, thread.inbound_message_id)
        inbound.status = "unmatched"
    thread.intent_data = {**(thread.intent_data or {}), "resolution": "rejected"}
    close(thread)
    return DecisionResult(thread.id, r.action, "rejected: the candidates send again; the message stays kept")


def _unknown_step(uow: UnitOfWork, thread: m.RescueThread, step_id: int | None) -> m.Step:
    query = select(m.Step).where(
        m.Step.lead_id == thread.lead_id,
        m.Step.workspace_id == uow.workspace_id,
        m.Step.state == StepState.UNKNOWN,
    )
    if step_id is not None:
        query = query.where(m.Step.id == step_id)
    steps = list(uow.session.scalars(query.order_by(m.Step.id)))
    if not steps:
        raise DecisionError("no send with an unknown outcome waits in this thread")
    if len(steps) > 1:
        raise DecisionError(
            f"several unknown outcomes: say which (--step {', '.join(str(x.id) for x in steps)})"
        )
    return steps[0]


def _after_unknown(uow: UnitOfWork, thread: m.RescueThread, r: Request, what: str) -> DecisionResult:
    """Once no unknown outcome is left, a lead held only for it goes on with its sequence."""
    lead = lead_of(uow, thread.lead_id)
    left = uow.session.scalar(
        select(m.Step.id).where(m.Step.lead_id == lead.id, m.Step.state == StepState.UNKNOWN).limit(1)
    )
    if left is None and lead.reply_state == ReplyState.HELD and "unknown" in (lead.hold_reason or ""):
        move_lead(uow, lead, ReplyState.ACTIVE, r.by, "unknown outcome resolved")
        planned = replan_lead(uow, lead.id, uow.clock.now())
        return DecisionResult(
            thread.id, r.action, f"{what}; resumed, {planned_text(planned)}", lead.reply_state, planned
        )
    return DecisionResult(thread.id, r.action, f"{what}; the lead stays {lead.reply_state}", lead.reply_state)


def it_was_sent(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    step = _unknown_step(uow, thread, r.step_id)
    resolve_unknown(uow, step.id, went_out=True)
    uow.session.execute(
        update(m.OutboundMessage).where(m.OutboundMessage.step_id == step.id).values(status="accepted")
    )
    return _after_unknown(uow, thread, r, f"step {step.position} marked sent")


def it_was_not_sent(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    step = _unknown_step(uow, thread, r.step_id)
    resolve_unknown(uow, step.id, went_out=False)
    uow.session.execute(
        update(m.OutboundMessage).where(m.OutboundMessage.step_id == step.id).values(status="not_sent")
    )
    return _after_unknown(uow, thread, r, f"step {step.position} marked not sent and dropped")


def send_again(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """A person checked that it did not go out: queue it again (same send key, so a transport
    that deduplicates by it still cannot deliver two copies)."""
    step = _unknown_step(uow, thread, r.step_id)
    if step.cancel_requested:
        raise DecisionError("a reply came in while this step was in flight: it is not sent again")
    put_back(step, uow.clock.now(), actor=Actor.PERSON, due_at=uow.clock.now())
    uow.session.execute(
        update(m.OutboundMessage).where(m.OutboundMessage.step_id == step.id).values(status="not_sent")
    )
    uow.add_event("unknown_resolved", lead_id=step.lead_id, step_id=step.id, went_out=False, send_again=True)
    return _after_unknown(uow, thread, r, f"step {step.position} queued again")


def confirm_sender(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """The stranger in the thread speaks for the lead: learn the address, apply the unsubscribe
    they asked for (`confirmations.confirm_sender`)."""
    confirmation_id = _pending_confirmation(uow, thread)
    outcome = confirmations.confirm_sender(uow, confirmation_id, s, by=r.by)
    what = "the sender is confirmed" + (f"; the lead is {outcome.lead_state}" if outcome else "")
    return DecisionResult(thread.id, r.action, what, lead_state=lead_of(uow, thread.lead_id).reply_state)


def reject_sender(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """The stranger does not speak for the lead: nothing is learned or unsubscribed. The lead
    stays stopped; resuming her is a decision of its own."""
    confirmations.reject_sender(uow, _pending_confirmation(uow, thread), by=r.by)
    return DecisionResult(
        thread.id, r.action, "the sender is rejected", lead_state=lead_of(uow, thread.lead_id).reply_state
    )


def _pending_confirmation(uow: UnitOfWork, thread: m.RescueThread) -> int:
    found = confirmations.pending_for(uow, thread.lead_id, thread.inbound_message_id)
    found = found or confirmations.pending_for(uow, thread.lead_id, None)
    if found is None:
        raise DecisionError("no sender waits for a confirmation on this thread")
    return found


def resend_step(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """A step that failed for good: try the same email again (`step_decisions.resend_step`)."""
    campaign, step = _held_step(uow, thread)
    try:
        done = step_decisions.resend_step(uow, campaign, step.to_address, step.position)
    except step_decisions.DecisionRefused as exc:
        raise DecisionError(str(exc)) from exc
    close(thread)
    return DecisionResult(
        thread.id, r.action, f"step {done.position} queued again; {done.note}", done.lead_state
    )


def skip_step(uow: UnitOfWork, thread: m.RescueThread, r: Request, s: Settings) -> DecisionResult:
    """Go on without the failed step: the next email starts the thread if this one was its first."""
    campaign, step = _held_step(uow, thread)
    try:
        done = step_decisions.skip_step(uow, campaign, step.to_address, step.position)
    except step_decisions.DecisionRefused as exc:
        raise DecisionError(str(exc)) from exc
    close(thread)
    return DecisionResult(thread.id, r.action, f"step {done.position} skipped; {done.note}", done.lead_state)


def _held_step(uow: UnitOfWork, thread: m.RescueThread) -> tuple[str, m.Step]:
    if thread.step_id is None:
        raise DecisionError("this thread is not about one step")
    step = uow.session.get_one(m.Step, thread.step_id)
    if step.workspace_id != uow.workspace_id:
        raise DecisionError("this thread is not about one step")
    campaign = uow.session.scalar(
        select(m.Campaign.name)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .where(m.Enrollment.id == step.enrollment_id)
    )
    assert campaign is not None
    return campaign, step
