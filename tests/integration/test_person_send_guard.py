"""A person's answer is sent like the worker sends (issue 20, item 3), in process, on both
databases: an outcome the transport cannot know is held (the thread waits on them, nothing is
sent again by itself); on SQLite, where the write lock is not held across the transport call,
an unsubscribe that commits during the SMTP transaction is seen by the last check before DATA
and nothing is handed over. (On PostgreSQL the lead lock is held across the call: the
unsubscribe waits, tests/integration/test_team_race.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.bootstrap import App
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, send_reply
from tests.support.scenario import reply, simple_workspace


class ScriptedTransport:
    """Runs `during` inside the transport call (as if the SMTP transaction were slow), then
    the last check, then answers `outcome`. Records what it was handed."""

    can_probe = False

    def __init__(self, outcome: Outcome, during: Callable[[], None] | None = None) -> None:
        self.outcome = outcome
        self.during = during
        self.handed: list[OutgoingEmail] = []

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        if self.during is not None:
            self.during()
        if before_commit is not None:
            try:
                before_commit()
            except Exception as exc:  # what the SMTP transport does: nothing handed over
                return Delivery(Outcome.TRANSIENT, f"aborted before DATA: {exc!r}")
        self.handed.append(email)
        return Delivery(self.outcome, "scripted")

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN

    def close(self) -> None:
        pass


def opened(app: App) -> tuple[str, int, int]:
    [email] = simple_workspace(app, 1)
    reply(app, email, "P")
    with app.uow() as uow:
        thread = uow.session.scalars(select(m.RescueThread)).one()
        return email, thread.id, thread.version


def test_an_unknown_outcome_is_held_and_the_thread_waits_on_them(app: App) -> None:
    _, thread, version = opened(app)
    transport = ScriptedTransport(Outcome.UNKNOWN)
    app.use_transport(transport)
    result = send_reply(app, PersonReply(thread, "Hi, 40 EUR a seat.", "ana", seen=version))
    assert result.state == "unknown" and len(transport.handed) == 1
    with app.uow() as uow:
        current = uow.session.get_one(m.RescueThread, thread).version
    assert current > version
    # Held: a second answer, even on the version now shown, is one only on purpose.
    with pytest.raises(SendRefused, match=r"ana answered at \d\d:\d\d"):
        send_reply(app, PersonReply(thread, "Did you get it?", "ben", seen=current))
    assert len(transport.handed) == 1
    again = send_reply(app, PersonReply(thread, "Did you get it?", "ben", seen=current, another=True))
    assert again.state == "unknown" and len(transport.handed) == 2


def test_an_unsubscribe_during_the_smtp_transaction_stops_the_answer_before_data(app: App) -> None:
    if app.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL holds the lead lock across the call: the unsubscribe waits for it")
    email, thread, version = opened(app)

    def unsubscribe() -> None:
        reply(app, email, "P", ReplyKind.UNSUBSCRIBE)

    transport = ScriptedTransport(Outcome.ACCEPTED, during=unsubscribe)
    app.use_transport(transport)
    with pytest.raises(SendRefused, match="unsubscribed"):
        send_reply(app, PersonReply(thread, "Hi, 40 EUR a seat.", "ana", seen=version))
    assert transport.handed == []
    with app.uow() as uow:
        [row] = uow.session.scalars(select(m.PersonSend)).all()
        assert row.state == "refused" and "unsubscribed" in (row.detail or "")
