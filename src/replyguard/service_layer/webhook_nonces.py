"""Replay protection for signed webhooks: a token is accepted once per provider.

The unique constraint is the check. `claim` inserts the token in the same transaction that
stores the message (`ingest_raw(..., with_store=...)`): of ten concurrent requests carrying
one token, one inserts it and stores its body, the others find it taken (on PostgreSQL they
wait for the first transaction, then see its row) and store nothing. A request whose store
fails rolls its claim back with it, so the provider's retry of it still gets in.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from replyguard.adapters.db import models as m
from replyguard.service_layer.uow import UnitOfWork

#: Tokens older than this cannot pass the timestamp check any more, so need not be kept:
#: a timestamp may be up to the skew ahead of the moment we saw it and is accepted until the
#: skew after it.
KEEP = timedelta(minutes=11)


class Replayed(Exception):
    """This provider's token was accepted before."""


def claim(uow: UnitOfWork, provider: str, nonce: str) -> None:
    """Take the token for this transaction, or raise Replayed.

    The caller commits (with the stored message) or rolls back (and the token is free again).
    """
    insert = (pg_insert if uow.postgres else sqlite_insert)(m.WebhookNonce)
    taken = uow.session.execute(
        insert.values(workspace_id=uow.workspace_id, provider=provider, nonce=nonce, seen_at=uow.clock.now())
        .on_conflict_do_nothing(index_elements=["workspace_id", "provider", "nonce"])
        .returning(m.WebhookNonce.id)
    ).scalar()
    if taken is None:
        raise Replayed(provider)


def forget_expired(uow: UnitOfWork, provider: str) -> None:
    """Delete tokens too old to pass the timestamp check. The caller commits.

    Kept out of `claim`'s transaction: concurrent deletes of the same rows there could
    deadlock with the inserts.
    """
    uow.session.execute(
        delete(m.WebhookNonce).where(
            m.WebhookNonce.workspace_id == uow.workspace_id,
            m.WebhookNonce.provider == provider,
            m.WebhookNonce.seen_at < uow.clock.now() - KEEP,
        )
    )
