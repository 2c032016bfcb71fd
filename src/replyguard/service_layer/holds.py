"""Handing a lead to a person when the send path cannot go on alone.

`hold_for_person` is THE one place where the sending side (the worker, recovery, re-rendering)
holds a lead for a person: a step that failed for good, a send whose outcome is unknown, a
step that can no longer be rendered. It moves the lead to HELD through the state machine,
records the event, and leaves a notice for the owner with everything needed to decide.
Reply Rescue threads attach here. (Holds that come from inbound mail go through the reply
transaction, `service_layer/replies.py`.)

`tell_crossed_send` tells a person about an email that went out while a reply was being
recorded (on SQLite the send is only known to have crossed once the transport answered).

Both work on a `Connection` inside the caller's transaction (the worker's own, or a unit of
work's `session.connection()`), so the hold commits with the step's result or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.states import Actor, IllegalTransition, ReplyState, StepState, check_reply_move

_L = cast(Table, m.Lead.__table__)
_S = cast(Table, m.Step.__table__)
_E = cast(Table, m.Enrollment.__table__)
_C = cast(Table, m.Campaign.__table__)
_P = cast(Table, m.Product.__table__)
_CT = cast(Table, m.Contact.__table__)
_CA = cast(Table, m.ContactAddress.__table__)
_N = cast(Table, m.Notice.__table__)
_EV = cast(Table, m.Event.__table__)

#: What a person can do about a held lead, by why it was held (shown in the notice).
DECISIONS: dict[str, list[str]] = {
    "step_failed": [
        "replyguard steps resend --campaign CAMPAIGN --lead EMAIL   (try the same email again)",
        "replyguard steps skip --campaign CAMPAIGN --lead EMAIL     (go on without it; the next"
        " email does not reply to it)",
        "replyguard leads stop EMAIL --product PRODUCT              (end the sequence)",
    ],
    "unknown_outcome": [
        "check the mailbox's Sent folder or the relay's log, then record what happened",
    ],
    "render_failed": [
        "fix the lead's data (leads import) or the campaign (campaign update), or skip the step",
    ],
}


def hold_for_person(
    conn: Connection,
    *,
    workspace_id: int,
    lead_id: int,
    now: datetime,
    kind: str,
    reason: str,
    step_id: int | None = None,
    details: Mapping[str, Any] | None = None,
) -> bool:
    """Hold the lead for a person and tell its owner. Returns True if the lead moved to HELD.

    An active or out-of-office lead becomes HELD with `reason`; a lead a person already owns
    (held, replied, stopped...) keeps its state, and its owner is still told. Must run under
    the lead's lock (the worker's, or `UnitOfWork.lock_leads`).
    """
    lead = conn.execute(
        select(_L.c.reply_state, _L.c.contact_id, _L.c.product_id).where(
            _L.c.id == lead_id, _L.c.workspace_id == workspace_id
        )
    ).one()
    state = ReplyState(lead.reply_state)
    try:
        check_reply_move(state, ReplyState.HELD, Actor.SYSTEM)
        moved = state in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE)
    except IllegalTransition:
        moved = False
    if moved:
        conn.execute(
            update(_L)
            .where(_L.c.id == lead_id)
            .values(reply_state=ReplyState.HELD, reply_state_updated_at=now, hold_reason=reason[:2000])
        )
        _event(conn, workspace_id, lead_id, step_id, now, "lead_held", {"kind": kind, "reason": reason})
    payload = {
        **_context(conn, lead, lead_id, step_id),
        "kind": kind,
        "hold_reason": reason,
        "held": moved,
        "details": dict(details or {}),
        "decisions": DECISIONS.get(kind, []),
    }
    _notice(conn, workspace_id, lead_id, now, f"held:{kind}", payload, step_id)
    return moved


def tell_crossed_send(
    conn: Connection, *, workspace_id: int, lead_id: int, step_id: int, now: datetime
) -> None:
    """An email went out while a reply was being recorded: tell the person who owns the reply,
    and add the email to the `crossed` list of the reply's own notice."""
    lead = conn.execute(
        select(_L.c.contact_id, _L.c.product_id, _L.c.last_reply_id).where(_L.c.id == lead_id)
    ).one()
    context = _context(conn, lead, lead_id, step_id)
    message_id = context.get("message_id")
    if lead.last_reply_id is not None:
        for notice_id, payload in conn.execute(
            select(_N.c.id, _N.c.payload).where(_N.c.reply_id == lead.last_reply_id)
        ):
            crossed = list((payload or {}).get("crossed") or [])
            if message_id not in crossed:
                conn.execute(
                    update(_N)
                    .where(_N.c.id == notice_id)
                    .values(payload={**(payload or {}), "crossed": [*crossed, message_id]})
                )
    payload = {
        **context,
        "kind": "crossed_send",
        "reply_id": lead.last_reply_id,
        "recommendation": "This email went out while the reply came in: mention it when you answer.",
    }
    _notice(conn, workspace_id, lead_id, now, "crossed_send", payload, step_id, reply_id=lead.last_reply_id)
    _event(conn, workspace_id, lead_id, step_id, now, "crossed_send_told", {"message_id": message_id})


def _context(conn: Connection, lead: Any, lead_id: int, step_id: int | None) -> dict[str, Any]:
    """Product, campaign, lead, thread and subject: what every notice carries."""
    product = conn.execute(select(_P.c.name).where(_P.c.id == lead.product_id)).scalar_one()
    contact = conn.execute(
        select(_CT.c.first_name, _CT.c.last_name, _CT.c.company).where(_CT.c.id == lead.contact_id)
    ).one()
    email = conn.execute(
        select(_CA.c.address)
        .where(_CA.c.contact_id == lead.contact_id)
        .order_by(_CA.c.is_primary.desc(), _CA.c.id)
        .limit(1)
    ).scalar_one()
    thread = list(
        conn.execute(
            select(_S.c.message_id)
            .where(_S.c.lead_id == lead_id, _S.c.state == StepState.SENT)
            .order_by(_S.c.sent_at, _S.c.id)
        ).scalars()
    )
    campaigns = select(_C.c.name).join(_E, _E.c.campaign_id == _C.c.id)
    step: Any = None
    if step_id is not None:
        step = conn.execute(
            select(_S.c.position, _S.c.subject, _S.c.message_id, _S.c.last_error, _S.c.enrollment_id).where(
                _S.c.id == step_id
            )
        ).one()
        campaigns = campaigns.where(_E.c.id == step.enrollment_id)
    else:
        campaigns = campaigns.where(_E.c.lead_id == lead_id).order_by(_E.c.id)
    return {
        "product": product,
        "campaigns": list(conn.execute(campaigns).scalars()),
        "lead": {
            "email": email,
            "name": f"{contact.first_name} {contact.last_name}".strip(),
            "company": contact.company,
        },
        "thread": thread,
        "subject": step.subject if step is not None else None,
        "step": step.position if step is not None else None,
        "message_id": step.message_id if step is not None else None,
        "last_error": step.last_error if step is not None else None,
    }


def _owner(conn: Connection, lead_id: int, step_id: int | None) -> str:
    query = select(_C.c.owner).join(_E, _E.c.campaign_id == _C.c.id)
    if step_id is not None:
        query = query.join(_S, _S.c.enrollment_id == _E.c.id).where(_S.c.id == step_id)
    else:
        query = query.where(_E.c.lead_id == lead_id).order_by(_E.c.id)
    owner = conn.execute(query.limit(1)).scalar()
    return str(owner or "owner@unknown.invalid")


def _notice(
    conn: Connection,
    workspace_id: int,
    lead_id: int,
    now: datetime,
    kind: str,
    payload: dict[str, Any],
    step_id: int | None,
    *,
    reply_id: int | None = None,
) -> None:
    recipient = _owner(conn, lead_id, step_id)
    notice_id = conn.execute(
        _N.insert()
        .values(
            workspace_id=workspace_id,
            lead_id=lead_id,
            reply_id=reply_id,
            recipient=recipient,
            kind=kind,
            payload=payload,
            created_at=now,
        )
        .returning(_N.c.id)
    ).scalar_one()
    _event(
        conn,
        workspace_id,
        lead_id,
        step_id,
        now,
        "notice_created",
        {"notice_id": notice_id, "recipient": recipient},
    )


def _event(
    conn: Connection,
    workspace_id: int,
    lead_id: int,
    step_id: int | None,
    now: datetime,
    kind: str,
    data: dict[str, Any],
) -> None:
    conn.execute(
        _EV.insert().values(
            workspace_id=workspace_id, lead_id=lead_id, step_id=step_id, kind=kind, at=now, data=data
        )
    )
