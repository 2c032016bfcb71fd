"""Connection reuse (issue 24, item 5): inside a `reusing()` scope one SMTP connection carries
several messages, RSET between them; any error, or `reuse` messages, closes it and the next
message opens a fresh one; outside a scope every message has its own session, as before.
A real aiosmtpd server counts the connections and the RSETs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from replyguard.adapters.transports.base import Outcome
from replyguard.adapters.transports.smtp import SmtpTransport
from tests.integration.test_smtp_transport import make_email, transport_for
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer


@pytest.fixture
def server() -> Iterator[RecordingSmtpServer]:
    with RecordingSmtpServer() as srv:
        yield srv


def _send(transport: SmtpTransport, n: int, start: int = 0) -> list[Outcome]:
    return [
        transport.send(make_email(to_address=f"lead{i}@example.test", send_key=f"k{i}")).outcome
        for i in range(start, start + n)
    ]


def test_one_connection_carries_the_messages_of_a_scope_with_rset_between(
    server: RecordingSmtpServer,
) -> None:
    transport = transport_for(server)
    with transport.reusing():
        assert _send(transport, 5) == [Outcome.ACCEPTED] * 5
    assert server.connections == 1 and transport.opened == 1
    assert server.rsets == 4  # before each message but the first on the connection
    assert len(server.accepted()) == 5


def test_outside_a_scope_every_message_has_its_own_session(server: RecordingSmtpServer) -> None:
    transport = transport_for(server)
    assert _send(transport, 3) == [Outcome.ACCEPTED] * 3
    assert server.connections == 3 and server.rsets == 0


def test_an_error_closes_the_connection_and_the_next_message_opens_a_fresh_one() -> None:
    picks = iter([Behaviour.ACCEPT, Behaviour.TEMPFAIL_RCPT, Behaviour.ACCEPT, Behaviour.ACCEPT])
    with RecordingSmtpServer(schedule=lambda _n: next(picks)) as server:
        transport = transport_for(server)
        with transport.reusing():
            outcomes = _send(transport, 4)
        assert outcomes == [Outcome.ACCEPTED, Outcome.TRANSIENT, Outcome.ACCEPTED, Outcome.ACCEPTED]
        # 1st and 2nd on one connection (the refusal closes it), 3rd and 4th on a fresh one.
        assert server.connections == 2
        assert transport.opened == 2


def test_a_connection_is_closed_after_reuse_messages() -> None:
    with RecordingSmtpServer() as server:
        transport = transport_for(server, reuse=2)
        with transport.reusing():
            assert _send(transport, 5) == [Outcome.ACCEPTED] * 5
        assert server.connections == 3  # 2 + 2 + 1


def test_a_connection_the_server_closed_while_idle_is_replaced_before_any_message() -> None:
    with RecordingSmtpServer() as server:
        transport = transport_for(server)
        with transport.reusing():
            assert _send(transport, 1) == [Outcome.ACCEPTED]
            _server_hangs_up(server)  # as a server does with a connection idle too long
            assert _send(transport, 1, start=1) == [Outcome.ACCEPTED]
        assert transport.opened == 2 and server.connections == 2
        assert [m.rcpt_tos for m in server.accepted()] == [("lead0@example.test",), ("lead1@example.test",)]


def test_threads_share_the_pool_and_never_open_more_than_run_at_once(server: RecordingSmtpServer) -> None:
    transport = transport_for(server)
    start = threading.Barrier(3)
    outcomes: list[Outcome] = []

    def slot(n: int) -> None:
        start.wait()
        outcomes.extend(_send(transport, 4, start=n * 4))

    with transport.reusing():
        threads = [threading.Thread(target=slot, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert outcomes == [Outcome.ACCEPTED] * 12
    assert server.connections <= 3
    assert len(server.accepted()) == 12


def _server_hangs_up(server: RecordingSmtpServer) -> None:
    assert server._controller is not None
    asyncio.run_coroutine_threadsafe(server._close_sessions(), server._controller.loop).result(10)
