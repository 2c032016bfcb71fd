"""Handing a lead to a person when the send path cannot go on alone.

`hold_for_person` is THE one place where the sending side (the worker, recovery, re-rendering)
holds a lead for a person: a step that failed for good, a send whose outcome is unknown, a
step that can no longer be rendered. It moves the lead to HELD through the state machine,
records the event, and hands the lead over through its rescue thread
(`threads.open_thread_on`): the thread names the step and the decisions that fit (resend,
skip, stop; it was sent / it was not), and its notice goes into the outbox. (Holds that come
from inbound mail go through the reply transaction, `service_layer/inbound/replies.py`.)

`tell_crossed_send` tells a person about an email that went out while a reply was being
recorded (on SQLite the send is only known to have crossed once the transport answered): the
reply's thread is marked crossed and its owner told again.

Both work on a `Connection` inside the caller's transaction (the worker's own, or a unit of
work's `session.connection()`), so the hold commits with the step's result or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import Actor, IllegalTransition, ReplyState, ThreadState, check_reply_move
from replyguard.service_layer.rescue.threads import Handoff, open_thread_on
from replyguard.settings import Settings

_L = cast(Table, m.Lead.__table__)
_S = cast(Table, m.Step.__table__)
_T = cast(Table, m.RescueThread.__table__)
_EV = cast(Table, m.Event.__table__)

#: The rescue thread each kind of hold opens.
THREAD_KINDS: dict[str, ThreadKind] = {
    "step_failed": ThreadKind.STEP_FAILED,
    "unknown_outcome": ThreadKind.UNKNOWN_OUTCOME,
    "render_failed": ThreadKind.RENDER_FAILED,
}


def hold_for_person(
    conn: Connection,
    *,
    workspace_id: int,
    lead_id: int,
    now: datetime,
    kind: str,
    reason: str,
    settings: Settings,
    step_id: int | None = None,
    details: Mapping[str, Any] | None = None,
    move: bool = True,
) -> bool:
    """Hold the lead for a person and hand it over. Returns True if the lead moved to HELD.

    An active or out-of-office lead becomes HELD with `reason` (unless `move=False`); a lead a
    person already owns (held, replied, stopped...) keeps its state, and the thread still tells
    its owner. Must run under the lead's lock (the worker's, or `UnitOfWork.lock_leads`).
    """
    lead = conn.execute(
        select(_L.c.reply_state).where(_L.c.id == lead_id, _L.c.workspace_id == workspace_id)
    ).one()
    state = ReplyState(lead.reply_state)
    moved = False
    if move and state in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE):
        try:
            check_reply_move(state, ReplyState.HELD, Actor.SYSTEM)
            moved = True
        except IllegalTransition:
            moved = False
    if moved:
        conn.execute(
            update(_L)
            .where(_L.c.id == lead_id)
            .values(reply_state=ReplyState.HELD, reply_state_updated_at=now, hold_reason=reason[:2000])
        )
    _event(
        conn,
        workspace_id,
        lead_id,
        step_id,
        now,
        "lead_held" if moved else "person_told",
        {"kind": kind, "reason": reason, **dict(details or {})},
    )
    subject = conn.execute(select(_S.c.subject).where(_S.c.id == step_id)).scalar() if step_id else None
    open_thread_on(
        conn,
        workspace_id=workspace_id,
        now=now,
        lead_id=lead_id,
        handoff=Handoff(
            kind=THREAD_KINDS[kind],
            reason=reason,
            step_id=step_id,
            subject=subject,
            state_before=str(state),
        ),
        settings=settings,
    )
    return moved


def tell_crossed_send(
    conn: Connection, *, workspace_id: int, lead_id: int, step_id: int, now: datetime, settings: Settings
) -> None:
    """An email went out while a reply was being recorded: mark the reply's thread crossed
    (its next step says to apologise) and tell its owner again."""
    message_id = conn.execute(select(_S.c.message_id).where(_S.c.id == step_id)).scalar()
    _event(conn, workspace_id, lead_id, step_id, now, "crossed_send_told", {"message_id": message_id})
    thread = conn.execute(
        select(_T.c.kind, _T.c.crossed)
        .where(_T.c.workspace_id == workspace_id, _T.c.lead_id == lead_id, _T.c.state != ThreadState.DONE)
        .order_by(_T.c.id.desc())
        .limit(1)
    ).first()
    if thread is None or thread.crossed:
        # No reply waits for a person (an absence, say), or the reply already saw the send in
        # flight and its thread says so: nothing new to tell.
        return
    open_thread_on(
        conn,
        workspace_id=workspace_id,
        now=now,
        lead_id=lead_id,
        handoff=Handoff(kind=ThreadKind(thread.kind), step_id=step_id, crossed=True),
        settings=settings,
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
