"""Every event a unit of work writes carries its transaction's id (`events.tx`), whichever way
it was added: `add_event` (batched or not) or a model object put in the session by code the
unit of work called. `replyguard audit` reads the ids to prove what was committed together."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.service_layer.uow import UnitOfWorkSession


def _event(at: datetime, workspace_id: int, kind: str) -> m.Event:
    return m.Event(workspace_id=workspace_id, kind=kind, at=at, data={})


def test_events_added_to_the_session_carry_the_transaction_id_and_a_commit_starts_another(app: App) -> None:
    with app.uow() as uow:
        assert isinstance(uow.session, UnitOfWorkSession)
        first_tx = uow.tx
        uow.session.add(_event(uow.clock.now(), uow.workspace_id, "probe_a"))
        uow.add_event("probe_b")
        uow.commit()
        second_tx = uow.tx
        uow.session.add(_event(uow.clock.now(), uow.workspace_id, "probe_c"))
        uow.commit()
    with app.uow() as uow:
        stamped = dict(
            uow.session.execute(select(m.Event.kind, m.Event.tx).where(m.Event.kind.like("probe_%"))).all()
        )
    assert first_tx != second_tx
    assert stamped == {"probe_a": first_tx, "probe_b": first_tx, "probe_c": second_tx}


def test_a_session_outside_a_unit_of_work_is_left_alone(app: App) -> None:
    """The listener is the session class's: a session of that class with no unit of work in
    its `info` (none is built so today) writes its events as they are."""
    with UnitOfWorkSession(bind=app.engine) as session:
        event = _event(app.clock.now(), 1, "probe_plain")
        session.add(event)
        session.flush()
        assert event.tx is None
        session.rollback()
