"""The LMTP/SMTP listener over real sockets: 250 only once stored, 451 when it cannot be."""

from __future__ import annotations

import smtplib
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import make_engine
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.lmtp import Listener
from replyguard.settings import Settings
from tests.integration.test_http_inbound import PRIYA, reply_to, sent  # noqa: F401  (fixture)
from tests.support.scenario import REPORTS, lead_state

TO = "dana@northwind.test"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def listening(app: App, *, lmtp: bool = True) -> Iterator[int]:
    listener = Listener(app, lmtp=lmtp, host="127.0.0.1", port=free_port())
    listener.start()
    try:
        yield listener.port
    finally:
        listener.stop()


def counts(app: App) -> tuple[int, int]:
    with app.uow() as uow:
        inbound = uow.session.scalar(select(func.count()).select_from(m.InboundMessage)) or 0
        replies = uow.session.scalar(select(func.count()).select_from(m.Reply)) or 0
    return inbound, replies


def test_lmtp_delivery_of_a_reply_is_stored_and_stops_the_lead(sent: App) -> None:  # noqa: F811
    with listening(sent) as port, smtplib.LMTP("127.0.0.1", port) as client:
        refused = client.sendmail(PRIYA, [TO], reply_to(sent).as_bytes())
    assert refused == {}
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    assert counts(sent) == (1, 1)


def test_the_same_message_delivered_twice_has_one_effect(sent: App) -> None:  # noqa: F811
    raw = reply_to(sent).as_bytes()
    with listening(sent) as port:
        for _ in range(2):
            with smtplib.LMTP("127.0.0.1", port) as client:
                assert client.sendmail(PRIYA, [TO], raw) == {}
    assert counts(sent) == (1, 1)


def test_lmtp_answers_once_per_recipient(sent: App) -> None:  # noqa: F811
    with listening(sent) as port, smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo_or_helo_if_needed()
        client.mail(PRIYA)
        for rcpt in (TO, "sales@northwind.test"):
            assert client.rcpt(rcpt)[0] == 250
        assert client.data(reply_to(sent).as_bytes())[0] == 250
        assert client.getreply()[0] == 250  # the second recipient's answer
        assert client.noop()[0] == 250  # and nothing left over in the stream
    assert counts(sent) == (1, 1)


def test_plain_smtp_mode(sent: App) -> None:  # noqa: F811
    with listening(sent, lmtp=False) as port, smtplib.SMTP("127.0.0.1", port) as client:
        assert client.sendmail(PRIYA, [TO], reply_to(sent).as_bytes()) == {}
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_a_storage_error_answers_451_so_the_mta_retries(tmp_path: Path, clock: FixedClock) -> None:
    # A database that cannot be opened: nothing can be stored, so nothing may be acknowledged.
    broken = App(make_engine(f"sqlite:///{tmp_path}/missing/dir/x.db"), clock, Settings())
    with (
        listening(broken) as port,
        smtplib.LMTP("127.0.0.1", port) as client,
        pytest.raises(smtplib.SMTPDataError) as failure,
    ):
        client.sendmail(PRIYA, [TO], b"From: a@b.test\r\nSubject: x\r\n\r\nhello\r\n")
    assert failure.value.smtp_code == 451
    broken.close()
