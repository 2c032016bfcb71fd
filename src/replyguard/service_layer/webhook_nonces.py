"""Replay protection for signed webhooks: a token is accepted once per provider.

`seen` is checked before the message is stored and `remember` runs after the store has
committed, so a request that failed to store does not burn its token (the provider's retry
still gets in). Two identical requests racing past `seen` both reach the store, whose
deduplication keeps one effect; the second `remember` then finds the row and does nothing.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from replyguard.adapters.db import models as m
from replyguard.service_layer.uow import UnitOfWork

#: Tokens older than this cannot pass the timestamp check any more, so need not be kept:
#: a timestamp may be up to the skew ahead of the moment we saw it and is accepted until the
#: skew after it.
KEEP = timedelta(minutes=11)


def seen(uow: UnitOfWork, provider: str, nonce: str) -> bool:
    """Whether this provider's token was already accepted."""
    found = uow.session.scalar(
        select(m.WebhookNonce.id).where(
            m.WebhookNonce.workspace_id == uow.workspace_id,
            m.WebhookNonce.provider == provider,
            m.WebhookNonce.nonce == nonce,
        )
    )
    return found is not None


def remember(uow: UnitOfWork, provider: str, nonce: str) -> None:
    """Record the token and forget expired ones. The caller commits."""
    now = uow.clock.now()
    uow.session.execute(
        delete(m.WebhookNonce).where(
            m.WebhookNonce.workspace_id == uow.workspace_id,
            m.WebhookNonce.provider == provider,
            m.WebhookNonce.seen_at < now - KEEP,
        )
    )
    try:
        with uow.session.begin_nested():
            uow.session.add(
                m.WebhookNonce(workspace_id=uow.workspace_id, provider=provider, nonce=nonce, seen_at=now)
            )
    except IntegrityError:
        pass  # a concurrent identical request recorded it first; the store kept one copy
