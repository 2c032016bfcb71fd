"""The one-click unsubscribe use case (RFC 8058), free of HTTP.

A token names a step (its send key) and proves we issued it. Unsubscribing goes through the
reply transaction, so the contact's queued steps stop in every product at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.message_ids import check_unsubscribe_token
from replyguard.domain.states import ReplyKind, ReplyState
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork

_TOKEN = re.compile(r"^[0-9a-f]{32}\.[0-9a-f]{20}$")


class UnknownToken(LookupError):
    """The token is malformed, forged, or names no step of this workspace."""


@dataclass(frozen=True, slots=True)
class OneClickResult:
    lead_id: int
    already: bool  # the lead was unsubscribed before this request


def lead_for_token(uow: UnitOfWork, token: str) -> int:
    """The lead whose step the token names; UnknownToken otherwise (no detail on why)."""
    if not _TOKEN.match(token):
        raise UnknownToken
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    key = check_unsubscribe_token(secret, token)
    lead_id = None
    if key is not None:
        lead_id = uow.session.scalar(
            select(m.Step.lead_id).where(m.Step.workspace_id == uow.workspace_id, m.Step.send_key == key)
        )
    if lead_id is None:
        raise UnknownToken
    return lead_id


def check_token(app: Runtime, token: str) -> int:
    """The lead a valid token names (read only); UnknownToken otherwise."""
    with app.uow() as uow:
        return lead_for_token(uow, token)


def one_click_unsubscribe(app: Runtime, token: str) -> OneClickResult:
    """Unsubscribe the contact behind `token` in one transaction; a repeat changes nothing."""
    with app.uow() as uow:
        lead_id = lead_for_token(uow, token)
        lead = uow.session.get_one(m.Lead, lead_id)
        # Lock every lead of the contact, in the order the reply transaction locks them, so
        # that two clicks at once are serialised and the second sees the first's result.
        uow.lock_leads(
            uow.session.scalars(
                select(m.Lead.id).where(
                    m.Lead.contact_id == lead.contact_id, m.Lead.workspace_id == uow.workspace_id
                )
            )
        )
        uow.session.refresh(lead)
        if lead.reply_state == ReplyState.UNSUBSCRIBED:
            return OneClickResult(lead_id, already=True)
        record_reply(
            uow,
            lead_id,
            IncomingReply(
                kind=ReplyKind.UNSUBSCRIBE,
                received_at=uow.clock.now(),
                evidence=("unsubscribe:one-click",),
                source="one-click",
            ),
            app.settings,
            app.hooks,
        )
        uow.commit()
    return OneClickResult(lead_id, already=False)
