"""Reading rescue threads: the one list of everything that waits for a person, and one thread
with its conversation, draft and decisions. Plain dicts (JSON-ready), workspace-scoped.

The recommended next step is recomputed from the lead as it is now, so that it stays true
after the other products moved or a person decided about them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_spec import draft_templates
from replyguard.domain.drafts import Draft, builtin_draft, proposed_time, reply_subject, template_draft
from replyguard.domain.intent import LABELS, Intent
from replyguard.domain.states import StepState, ThreadState
from replyguard.service_layer.rescue import thread_versions
from replyguard.service_layer.rescue.decision_base import get_thread
from replyguard.service_layer.rescue.notices import thread_url
from replyguard.service_layer.rescue.thread_context import (
    ThreadContext,
    intent_of,
    load_context,
    next_step_for,
)
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings

STATES = ("open", "snoozed", "done", "all")


def effective_state(thread: m.RescueThread, now: datetime) -> str:
    """A snoozed thread whose time has come is open again."""
    if thread.state == ThreadState.SNOOZED and thread.snoozed_until and thread.snoozed_until <= now:
        return ThreadState.OPEN
    return thread.state


def list_threads(
    uow: UnitOfWork,
    settings: Settings,
    *,
    state: str = "open",
    product: str | None = None,
    audit: bool = False,
) -> list[dict[str, Any]]:
    """Threads in `state`, newest first. The audit's canary threads (`replyguard audit`) are
    listed only with `audit=True`, and then only they are: they are nobody's work."""
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    canary = (
        select(m.Lead.id)
        .where(m.Lead.id == m.RescueThread.lead_id, m.Lead.audit_run_id.is_not(None))
        .exists()
    )
    query = select(m.RescueThread).where(
        m.RescueThread.workspace_id == uow.workspace_id, canary if audit else ~canary
    )
    if product is not None:
        query = query.join(m.Product, m.Product.id == m.RescueThread.product_id).where(
            m.Product.name == product
        )
    if state in ("open", "snoozed"):
        query = query.where(m.RescueThread.state.in_([ThreadState.OPEN, ThreadState.SNOOZED]))
    elif state == "done":
        query = query.where(m.RescueThread.state == ThreadState.DONE)
    now = uow.clock.now()
    rows = list(uow.session.scalars(query.order_by(m.RescueThread.updated_at.desc(), m.RescueThread.id)))
    return [summary(uow, t, settings) for t in rows if state == "all" or effective_state(t, now) == state]


def summary(uow: UnitOfWork, thread: m.RescueThread, settings: Settings) -> dict[str, Any]:
    context = load_context(uow.session, uow.workspace_id, thread.lead_id)
    now = uow.clock.now()
    text, actions = next_step_for(thread, context, now, settings, uow.session)
    decided = (thread.intent_data or {}).get("others_decided")
    return {
        "id": thread.id,
        "url": thread_url(settings, thread.id),
        "product": context.product,
        "campaign": context.campaigns[0] if context.campaigns else None,
        "campaigns": list(context.campaigns),
        "lead": context.email,
        "lead_name": context.name,
        "company": context.company,
        "lead_state": context.lead_state,
        "mailbox": context.mailbox,
        "subject": thread.subject,
        "kind": thread.kind,
        "reason": thread.reason,
        "intent": thread.intent,
        "intent_label": LABELS[Intent(thread.intent)] if thread.intent else None,
        "recommended_next_step": text,
        "actions": actions,
        "other_active_products": [
            {
                "product": p.product,
                "state": p.state,
                "next_step_at": p.next_step_at.isoformat() if p.next_step_at else None,
                "next_subject": p.next_subject,
            }
            for p in context.other_products
        ],
        "others_decided": decided,
        "version": thread.version,
        "waiting_on_them": "send_another" in actions,
        "crossed": bool(thread.crossed),
        "state": effective_state(thread, now),
        "snoozed_until": thread.snoozed_until.isoformat() if thread.snoozed_until else None,
        "owner": thread.owner,
        "assignee": thread.assignee,
        "candidates": list(thread.candidates or []),
        "created_at": thread.created_at.isoformat(),
        "updated_at": thread.updated_at.isoformat(),
    }


def thread_detail(uow: UnitOfWork, thread_id: int, settings: Settings) -> dict[str, Any]:
    thread = get_thread(uow, thread_id)
    context = load_context(uow.session, uow.workspace_id, thread.lead_id)
    draft = draft_for(uow, thread, context)
    return {
        **summary(uow, thread, settings),
        "text": thread.text,
        "evidence": list(thread.evidence or []),
        "intent_detail": dict((thread.intent_data or {}).items()),
        "model_intent": thread.model_intent,
        "conversation": conversation(uow, thread),
        "unknown_steps": unknown_steps(uow, thread.lead_id),
        "draft": {"subject": draft.subject, "body": draft.body, "source": draft.source}
        | ({"note": draft.note} if draft.note else {}),
        "sent_by_people": person_sends(uow, thread.id),
        "decisions": decisions(uow, thread),
    }


def thread_draft(uow: UnitOfWork, thread_id: int) -> Draft:
    """The draft of a thread as `thread_detail` shows it (ThreadNotFound for another workspace's)."""
    thread = get_thread(uow, thread_id)
    return draft_for(uow, thread, load_context(uow.session, uow.workspace_id, thread.lead_id))


def draft_of_version(uow: UnitOfWork, thread_id: int, seen: int) -> Draft:
    """The draft as shown on version `seen`; VersionChanged when the thread moved since (a
    newer message is never answered with a draft the person did not see)."""
    draft = thread_draft(uow, thread_id)
    thread_versions.check_seen(uow.session, uow.workspace_id, thread_id, seen)
    return draft


def draft_for(uow: UnitOfWork, thread: m.RescueThread, context: ThreadContext) -> Draft:
    """The draft a person starts from: a model's when one was written, else the template for
    the intent (the campaign's own `[campaign.drafts]` first)."""
    if thread.draft_body:
        return Draft(reply_subject(thread.subject), thread.draft_body, "model")
    contact = uow.session.get_one(m.Contact, context.contact_id)
    result = intent_of(thread)
    values = {
        "first_name": contact.first_name or "there",
        "last_name": contact.last_name,
        "full_name": context.name,
        "company": contact.company,
        "title": contact.title,
        "email": context.email,
        "owner": context.owner,
        "sender": context.from_name or context.owner,
        "product": context.product,
        "subject": thread.subject or "",
        "referral_name": (result.referral_name if result else None) or "",
        "referral_address": (result.referral_address if result else None) or "",
        "date": result.date.strftime("%d %B") if result and result.date else "",
        "their_time": proposed_time(thread.text or ""),
        "asked": "pricing" if result is not None and result.pricing else "",
    }
    intent = result.intent if result else Intent.OTHER
    try:
        return template_draft(intent, values, campaign_drafts(uow, context))
    except Exception as exc:  # a thread must open whatever a template does
        # template_draft already falls back on a template's own errors; this is the last line,
        # for anything else (a campaign source that no longer reads, a bug): never a 500.
        note = (
            f"The campaign's draft could not be made ({exc.__class__.__name__}); the built-in draft is shown."
        )
        return builtin_draft(
            intent, {k: v or "" for k, v in values.items()}, reply_subject(thread.subject), note=note
        )


def campaign_drafts(uow: UnitOfWork, context: ThreadContext) -> dict[str, str]:
    """The campaign's `[campaign.drafts]` templates, read without validating the whole file again
    (its steps were trial-rendered when it was created)."""
    if not context.campaign_ids:
        return {}
    source = uow.session.scalar(select(m.Campaign.source).where(m.Campaign.id == context.campaign_ids[0]))
    return draft_templates(source or "")


def conversation(uow: UnitOfWork, thread: m.RescueThread) -> list[dict[str, Any]]:
    """Our sent emails, their replies and what people sent from the thread, oldest first."""
    items: list[dict[str, Any]] = []
    for step in uow.session.scalars(
        select(m.Step).where(m.Step.lead_id == thread.lead_id, m.Step.state == StepState.SENT)
    ):
        items.append(
            _item("ours", step.sent_at, step.subject, step.body, step.message_id, crossed=step.crossed)
        )
    for reply in uow.session.scalars(select(m.Reply).where(m.Reply.lead_id == thread.lead_id)):
        items.append(_item(f"theirs:{reply.kind}", reply.received_at, reply.subject, reply.text, None))
    if not items and thread.text:
        items.append(_item("theirs", thread.created_at, thread.subject, thread.text, None))
    for sent in uow.session.scalars(select(m.PersonSend).where(m.PersonSend.lead_id == thread.lead_id)):
        if sent.state == "sent":
            items.append(
                _item(f"ours:person:{sent.sent_by}", sent.sent_at, sent.subject, sent.body, sent.message_id)
            )
    return sorted(items, key=lambda i: i["at"] or "")


def _item(
    who: str,
    at: datetime | None,
    subject: str | None,
    text: str | None,
    message_id: str | None,
    crossed: bool = False,
) -> dict[str, Any]:
    return {
        "from": who,
        "at": at.isoformat() if at else None,
        "subject": subject,
        "text": text,
        "message_id": message_id,
        "crossed": crossed,
    }


def unknown_steps(uow: UnitOfWork, lead_id: int) -> list[dict[str, Any]]:
    rows = uow.session.scalars(
        select(m.Step).where(m.Step.lead_id == lead_id, m.Step.state == StepState.UNKNOWN).order_by(m.Step.id)
    )
    return [
        {"step_id": s.id, "position": s.position, "subject": s.subject, "detail": s.last_error} for s in rows
    ]


def person_sends(uow: UnitOfWork, thread_id: int) -> list[dict[str, Any]]:
    rows = uow.session.scalars(
        select(m.PersonSend).where(m.PersonSend.thread_id == thread_id).order_by(m.PersonSend.id)
    )
    return [
        {
            "id": s.id,
            "state": s.state,
            "by": s.sent_by,
            "to": s.to_address,
            "subject": s.subject,
            "message_id": s.message_id,
            "sent_at": s.sent_at.isoformat() if s.sent_at else None,
        }
        for s in rows
    ]


def decisions(uow: UnitOfWork, thread: m.RescueThread) -> list[dict[str, Any]]:
    rows = uow.session.scalars(
        select(m.Event)
        .where(
            m.Event.workspace_id == uow.workspace_id,
            m.Event.lead_id == thread.lead_id,
            m.Event.kind.in_(["thread_decision", "person_reply_sent"]),
        )
        .order_by(m.Event.id)
    )
    return [
        {"at": e.at.isoformat(), "kind": e.kind, **{k: v for k, v in e.data.items() if k != "planned"}}
        for e in rows
        if (e.data or {}).get("thread_id") == thread.id
    ]
