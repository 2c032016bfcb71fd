"""Replay protection for signed webhooks: a token is accepted once per provider.

The unique constraint is the check. `claim` inserts the token in the same transaction that
stores the message (`ingest_raw(..., with_store=...)`): of ten concurrent requests carrying
one token, one inserts it and stores its body, the others find it taken (on PostgreSQL they
wait for the first transaction, then see its row) and store nothing. A request whose store
fails rolls its claim back with it, so the provider's retry of it still gets in.

Times are the provider's clock as we read it (the wall clock that checks the signature), so a
simulated clock elsewhere cannot forget a token while its timestamp still passes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from replyguard.adapters.db import models as m
from replyguard.service_layer.uow import UnitOfWork


class Replayed(Exception):
    """This provider's token was accepted before."""


def claim(uow: UnitOfWork, provider: str, nonce: str, *, at: datetime) -> None:
    """Take the token for this transaction, or raise Replayed.

    The caller commits (with the stored message) or rolls back (and the token is free again).
    """
    insert = (pg_insert if uow.postgres else sqlite_insert)(m.WebhookNonce)
    taken = uow.session.execute(
        insert.values(workspace_id=uow.workspace_id, provider=provider, nonce=nonce, seen_at=at)
        .on_conflict_do_nothing(index_elements=["workspace_id", "provider", "nonce"])
        .returning(m.WebhookNonce.id)
    ).scalar()
    if taken is None:
        raise Replayed(provider)


def forget_expired(uow: UnitOfWork, provider: str, *, now: datetime, keep: timedelta) -> None:
    """Delete tokens seen more than `keep` ago; `keep` must outlast the timestamp check
    (`RetrySchedule.keep_tokens`), or a replay would pass once its token is forgotten. The
    caller commits.

    Kept out of `claim`'s transaction: concurrent deletes of the same rows there could
    deadlock with the inserts.
    """
    uow.session.execute(
        delete(m.WebhookNonce).where(
            m.WebhookNonce.workspace_id == uow.workspace_id,
            m.WebhookNonce.provider == provider,
            m.WebhookNonce.seen_at < now - keep,
        )
    )
