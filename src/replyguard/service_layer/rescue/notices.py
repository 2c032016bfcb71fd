"""Notices: what a person is told when a thread opens or changes, written into the outbox.

`queue_notice` runs inside the transaction that opened the thread (the reply transaction, a
hold, the worker's unknown outcome): the notice row is the outbox entry, committed with the
thread or not at all. Delivery to the configured channels happens after commit, in
`service_layer/rescue/notice_delivery.py`; it never blocks ingest.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.domain.intent import LABELS, Intent
from replyguard.service_layer.rescue.thread_context import ThreadContext
from replyguard.settings import Settings

_TEXT_LIMIT = 5000
_NOTICES = cast(Table, m.Notice.__table__)
_INSERT_NOTICE = insert(_NOTICES).returning(_NOTICES.c.id)


def thread_url(settings: Settings, thread_id: int) -> str:
    return f"{settings.public_url}/threads/{thread_id}"


def notice_uid(workspace_secret: str, notice_id: int) -> str:
    """The notice's id for receivers (webhook-id, Message-ID): stable across retries and
    restarts, unique across workspaces and databases, unguessable."""
    digest = hmac.new(workspace_secret.encode(), f"notice:{notice_id}".encode(), hashlib.sha256)
    return f"ntc_{digest.hexdigest()[:32]}"


def payload_of(
    thread: m.RescueThread, context: ThreadContext, settings: Settings, *, created: bool
) -> dict[str, Any]:
    """Everything a person needs to act: product, campaign, lead, thread, subject, intent,
    next step, and the lead's other live products."""
    return {
        "type": "thread.opened" if created else "thread.updated",
        "thread": {"id": thread.id, "url": thread_url(settings, thread.id), "state": thread.state},
        "product": context.product,
        "campaign": context.campaigns[0] if context.campaigns else None,
        "campaigns": list(context.campaigns),
        "lead": {
            "email": context.email,
            "name": context.name,
            "company": context.company,
            "state": context.lead_state,
        },
        "mailbox": context.mailbox,
        "owner": context.owner,
        "subject": thread.subject,
        "kind": thread.kind,
        "intent": thread.intent,
        "intent_label": LABELS[Intent(thread.intent)] if thread.intent else None,
        "recommended_next_step": thread.next_step,
        "actions": list(thread.actions or []),
        "crossed": bool(thread.crossed),
        "reason": thread.reason,
        "text": (thread.text or "")[:_TEXT_LIMIT],
        "new_contact": (thread.intent_data or {}).get("new_contact"),
        "referral": {
            "name": (thread.intent_data or {}).get("referral_name"),
            "address": (thread.intent_data or {}).get("referral_address"),
        },
        "candidates": list(thread.candidates or []),
        "other_active_products": [
            {
                "product": p.product,
                "state": p.state,
                "next_step_at": p.next_step_at.isoformat() if p.next_step_at else None,
                "next_subject": p.next_subject,
            }
            for p in context.other_products
        ],
    }


def queue_notice(
    session: Session,
    thread: m.RescueThread,
    context: ThreadContext,
    now: datetime,
    settings: Settings,
    *,
    created: bool,
) -> int:
    """Write the notice (the outbox entry) for `thread`, with one prebuilt INSERT ... RETURNING
    id; its event is the caller's to record. The caller's transaction commits it."""
    values = {
        "workspace_id": thread.workspace_id,
        "lead_id": thread.lead_id,
        "reply_id": thread.reply_id,
        "thread_id": thread.id,
        "recipient": thread.assignee or thread.owner,
        "kind": thread.kind,
        "payload": payload_of(thread, context, settings, created=created),
        "created_at": now,
    }
    return int(session.execute(_INSERT_NOTICE, values).scalar_one())
