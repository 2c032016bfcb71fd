"""Model drafts, after commit: for each thread a human reply opened (`model_state` pending),
ask the model for an intent and a draft, outside any transaction, then store them.

A failure changes nothing but the draft: the thread keeps its rules intent, next step and
template draft, and is marked `failed` so that it is not asked again in a loop. The model
is never called inside the reply transaction (it is not even importable from there).
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.adapters.model_client import DraftPrompt, DraftSuggestion, ModelError
from replyguard.service_layer.rescue.thread_context import load_context
from replyguard.service_layer.runtime import Runtime


class DraftModel(Protocol):
    def suggest(self, prompt: DraftPrompt) -> DraftSuggestion: ...


def draft_pending(app: Runtime, model: DraftModel, limit: int = 20) -> int:
    """Draft the pending threads (oldest first). Returns how many were drafted or failed."""
    with app.uow() as uow:
        ids = uow.session.scalars(
            select(m.RescueThread.id)
            .where(m.RescueThread.workspace_id == uow.workspace_id, m.RescueThread.model_state == "pending")
            .order_by(m.RescueThread.id)
            .limit(limit)
        ).all()
    for thread_id in ids:
        draft_thread(app, model, thread_id)
    return len(ids)


def draft_thread(app: Runtime, model: DraftModel, thread_id: int) -> bool:
    """Ask the model about one thread. True when a draft was stored."""
    with app.uow() as uow:
        thread = uow.session.get_one(m.RescueThread, thread_id)
        if thread.workspace_id != uow.workspace_id:
            raise LookupError(f"no thread {thread_id} in this workspace")
        context = load_context(uow.session, uow.workspace_id, thread.lead_id)
        prompt = DraftPrompt(
            product=context.product,
            lead_name=context.name,
            company=context.company,
            sender=context.from_name or context.owner,
            subject=thread.subject or "",
            reply_text=thread.text or "",
            rules_intent=thread.intent,
        )
    error: str | None = None
    try:
        suggestion = model.suggest(prompt)
    except ModelError as exc:
        error = str(exc)
        values: dict[str, object] = {"model_state": "failed"}
    else:
        values = {"model_state": "done", "draft_body": suggestion.draft, "model_intent": suggestion.intent}
    with app.uow() as uow:
        uow.session.execute(update(m.RescueThread).where(m.RescueThread.id == thread_id).values(**values))
        uow.add_event("model_draft", thread_id=thread_id, ok=error is None, error=error)
        uow.commit()
    return error is None
