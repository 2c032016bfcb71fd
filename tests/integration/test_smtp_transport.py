"""SmtpTransport against real aiosmtpd servers on loopback: every outcome, AUTH, TLS, headers.

The servers in tests.support.smtp_servers are the oracle: what they recorded is what was
accepted, whatever the transport believed.
"""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from replyguard.adapters.transports import make_transport
from replyguard.adapters.transports.base import Delivery, Outcome, Probe
from replyguard.adapters.transports.maildir import MaildirTransport, NullTransport
from replyguard.adapters.transports.smtp import SmtpSettings, SmtpTransport, wire_payload
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.smtp_answers import Blame
from tests.support.smtp_servers import (
    ACCEPTING,
    Behaviour,
    DropMidDataServer,
    HangAfterDataServer,
    HangOnQuitServer,
    RecordingSmtpServer,
    RejectServer,
    SmtpTestServer,
    TempFailServer,
    read_log,
    seeded_schedule,
)
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert

SECRET = "s3cr%t p@ss/wörd"  # needs URL-encoding, and is distinctive enough to grep for
FAST = 1.0  # seconds: the transport timeout in tests that wait for a silent server

_counter = iter(range(10**6))


def make_email(**overrides: object) -> OutgoingEmail:
    n = next(_counter)
    key = f"{n:032x}"
    fields: dict[str, object] = {
        "send_key": key,
        "message_id": f"<rg.{key}@example.test>",
        "from_name": "Ada Sender",
        "from_address": "ada@example.test",
        "to_name": "Bob Lead",
        "to_address": "bob@example.org",
        "subject": "Quick question",
        "body": "Hi Bob,\n\nDo you have a minute?\n\nAda\n",
        "date": datetime(2026, 11, 30, 9, 30, tzinfo=UTC),
    }
    fields.update(overrides)
    return OutgoingEmail(**fields)  # type: ignore[arg-type]


def transport_for(server: SmtpTestServer, **options: object) -> SmtpTransport:
    options.setdefault("timeout", 5)
    return SmtpTransport(server.url(**options))


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture
def server() -> Iterator[RecordingSmtpServer]:
    with RecordingSmtpServer() as running:
        yield running


# -- acceptance and the message on the wire -------------------------------------------------


def test_the_envelope_sender_is_the_signed_return_path_of_the_send(server: RecordingSmtpServer) -> None:
    # Issue 22: a bounce goes to the envelope sender; ours names the send, so it is bound.
    path = "ada+bounces-00ff.0123456789abcdef0123@example.test"
    delivery = transport_for(server).send(make_email(return_path=path))
    assert delivery.outcome is Outcome.ACCEPTED, delivery
    [received] = server.accepted()
    assert received.mail_from == path
    assert received.message()["From"] == "Ada Sender <ada@example.test>"


def test_accepted_message_carries_every_header(server: RecordingSmtpServer) -> None:
    email = make_email(
        in_reply_to="<rg.0001@example.test>",
        references="<rg.0000@example.test> <rg.0001@example.test>",
        unsubscribe_url="https://example.test/u/abc",
        unsubscribe_mailto="unsubscribe+abc@example.test",
    )
    delivery = transport_for(server).send(email)

    assert delivery.outcome is Outcome.ACCEPTED, delivery
    assert delivery.ref == "2.0.0 Ok: queued as RG000001"
    [received] = server.accepted()
    assert received.mail_from == "ada@example.test"
    assert received.rcpt_tos == ("bob@example.org",)
    assert received.send_key == email.send_key
    msg = received.message()
    assert msg["Message-ID"] == email.message_id
    assert msg["In-Reply-To"] == "<rg.0001@example.test>"
    assert msg["References"] == "<rg.0000@example.test> <rg.0001@example.test>"
    unsubscribe = "<https://example.test/u/abc>, <mailto:unsubscribe+abc@example.test>"
    assert msg["List-Unsubscribe"] == unsubscribe
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg["Date"].datetime == email.date
    assert msg["To"] == "Bob Lead <bob@example.org>"
    assert received.data_at <= received.accepted_at


def test_without_threading_or_unsubscribe_those_headers_are_absent(
    server: RecordingSmtpServer,
) -> None:
    assert transport_for(server).send(make_email()).outcome is Outcome.ACCEPTED
    msg = server.accepted()[0].message()
    for header in ("In-Reply-To", "References", "List-Unsubscribe", "List-Unsubscribe-Post"):
        assert header not in msg


def test_dots_and_unicode_survive_the_wire(server: RecordingSmtpServer) -> None:
    body = ".\n..two\n.leading dot\nGrüße, Zoë — naïve café\n.\n"
    email = make_email(subject="Grüße aus Köln", body=body)
    assert transport_for(server).send(email).outcome is Outcome.ACCEPTED

    msg = server.accepted()[0].message()
    assert msg["Subject"] == "Grüße aus Köln"
    assert msg.get_content().replace("\r\n", "\n") == body


def test_wire_payload_normalises_line_ends_and_stuffs_dots() -> None:
    assert wire_payload(b"a\nb\r.c\r\n.\r\n") == b"a\r\nb\r\n..c\r\n..\r\n.\r\n"
    assert wire_payload(b"no final newline") == b"no final newline\r\n.\r\n"


def test_probe_cannot_prove_anything_over_smtp(server: RecordingSmtpServer) -> None:
    transport = transport_for(server)
    assert transport.can_probe is False
    assert transport.probe(make_email()) is Probe.UNKNOWN


# -- refusals before the end of data --------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "outcome", "stage"),
    [
        (Behaviour.TEMPFAIL_RCPT, Outcome.TRANSIENT, "RCPT TO refused: 451"),
        (Behaviour.REJECT_RCPT, Outcome.PERMANENT, "RCPT TO refused: 550"),
        (Behaviour.TEMPFAIL_DATA, Outcome.TRANSIENT, "DATA refused: 451"),
        (Behaviour.REJECT_DATA, Outcome.PERMANENT, "DATA refused: 554"),
        (Behaviour.TEMPFAIL_END, Outcome.TRANSIENT, "message refused: 451"),
        (Behaviour.REJECT_END, Outcome.PERMANENT, "message refused: 550"),
        (Behaviour.MAILBOX_FULL_RCPT, Outcome.TRANSIENT, "RCPT TO refused: 452"),
        (Behaviour.MAILBOX_FULL_END, Outcome.TRANSIENT, "message refused: 552"),
        (Behaviour.REJECT_SENDER, Outcome.TRANSIENT, "MAIL FROM refused: 550"),
        (Behaviour.RELAY_DENIED, Outcome.TRANSIENT, "RCPT TO refused: 554"),
    ],
)
def test_refusals_are_classified_and_nothing_is_accepted(
    behaviour: Behaviour, outcome: Outcome, stage: str
) -> None:
    with SmtpTestServer(behaviour=behaviour) as faulty:
        delivery = transport_for(faulty).send(make_email())
        assert delivery.outcome is outcome, delivery
        assert delivery.detail.startswith(stage), delivery.detail
        assert delivery.blame is BLAME[behaviour], delivery
        assert faulty.accepted() == []
        assert faulty.transactions == [behaviour]


#: Whose problem each refusal is (domain/smtp_answers.py; the full table is a unit test).
BLAME = {
    Behaviour.TEMPFAIL_RCPT: Blame.NONE,
    Behaviour.REJECT_RCPT: Blame.ADDRESS,  # 550 5.1.1: a hard bounce at send time
    Behaviour.TEMPFAIL_DATA: Blame.NONE,
    Behaviour.REJECT_DATA: Blame.NONE,
    Behaviour.TEMPFAIL_END: Blame.NONE,
    Behaviour.REJECT_END: Blame.NONE,
    Behaviour.MAILBOX_FULL_RCPT: Blame.MAILBOX_FULL,
    Behaviour.MAILBOX_FULL_END: Blame.MAILBOX_FULL,
    Behaviour.REJECT_SENDER: Blame.SENDER,
    Behaviour.RELAY_DENIED: Blame.SENDER,
}


def test_a_refusal_picked_by_recipient_overrides_the_transaction() -> None:
    unknown = {"nobody@example.org": Behaviour.REJECT_RCPT}
    with SmtpTestServer(by_recipient=unknown.get) as server:
        assert transport_for(server).send(make_email(to_address="nobody@example.org")).blame is Blame.ADDRESS
        assert transport_for(server).send(make_email()).outcome is Outcome.ACCEPTED
        assert server.transactions == [Behaviour.REJECT_RCPT, Behaviour.ACCEPT]


def test_named_fault_servers_default_to_their_fault() -> None:
    with TempFailServer() as tempfail, RejectServer() as reject:
        assert transport_for(tempfail).send(make_email()).outcome is Outcome.TRANSIENT
        assert transport_for(reject).send(make_email()).outcome is Outcome.PERMANENT


def test_connection_refused_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delivery = SmtpTransport(f"smtp://127.0.0.1:{port}?timeout=2").send(make_email())
    assert delivery.outcome is Outcome.TRANSIENT
    assert "cannot connect" in delivery.detail


def test_unresolvable_host_is_transient() -> None:
    delivery = SmtpTransport("smtp://no-such-host.invalid:25?timeout=2").send(make_email())
    assert delivery.outcome is Outcome.TRANSIENT
    assert "cannot connect" in delivery.detail


def test_a_silent_server_times_out_before_data_as_transient() -> None:
    # The kernel completes the handshake for a listening socket nobody accepts from, so
    # the client connects and then waits for a greeting that never comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        # Without the timeout the greeting would be awaited until pytest's own timeout.
        delivery = SmtpTransport(f"smtp://127.0.0.1:{port}?timeout=0.5").send(make_email())
    assert delivery.outcome is Outcome.TRANSIENT


def test_the_timeout_bounds_the_whole_send_not_each_wait() -> None:
    # Each answer comes well within the timeout, but together they overrun it.
    # Were each wait bounded on its own, every 0.4 s answer would come in time and the server
    # would take the message: refused before the end of DATA, it proves the bound is the whole.
    with RecordingSmtpServer(command_delay=0.4) as slow:
        delivery = transport_for(slow, timeout=FAST).send(make_email())
        assert delivery.outcome is Outcome.TRANSIENT, delivery
        assert slow.accepted() == []


def test_drop_while_the_content_is_being_written_is_transient() -> None:
    # Bigger than every socket buffer on the way, so the drop lands while we still write.
    big_body = ("x" * 76 + "\n") * 300_000  # about 23 MB
    with DropMidDataServer() as dropping:
        delivery = transport_for(dropping).send(make_email(body=big_body))
        assert delivery.outcome is Outcome.TRANSIENT, delivery
        assert "sending content" in delivery.detail
        assert dropping.accepted() == []


# -- after the final dot --------------------------------------------------------------------


def test_no_reply_after_the_final_dot_is_unknown_and_the_server_did_take_it() -> None:
    with HangAfterDataServer() as hanging:
        delivery = transport_for(hanging, timeout=FAST).send(make_email())
        assert delivery.outcome is Outcome.UNKNOWN, delivery
        # The oracle shows why UNKNOWN must never be resent blindly: the message went out.
        assert len(hanging.accepted()) == 1


def test_disconnect_after_the_final_dot_is_unknown() -> None:
    with SmtpTestServer(behaviour=Behaviour.DROP_AFTER_ACCEPT) as dropping:
        delivery = transport_for(dropping).send(make_email())
        assert delivery.outcome is Outcome.UNKNOWN, delivery
        assert len(dropping.accepted()) == 1


def test_a_server_hanging_on_quit_still_yields_accepted_promptly() -> None:
    # The server never answers QUIT while it runs, and the transport's own timeout is nearly an hour:
    # only the cap on the QUIT wait lets send() return before pytest's timeout ends the test.
    with HangOnQuitServer() as hanging:
        delivery = transport_for(hanging, timeout=3599).send(make_email())
        assert delivery.outcome is Outcome.ACCEPTED, delivery
        assert len(hanging.accepted()) == 1


# -- the before_commit hook -----------------------------------------------------------------


def test_before_commit_runs_once_after_the_envelope_and_before_data(
    server: RecordingSmtpServer,
) -> None:
    seen: list[tuple[int, int]] = []

    def hook() -> None:
        seen.append((len(server.transactions), server.data_commands))

    assert transport_for(server).send(make_email(), before_commit=hook).outcome is Outcome.ACCEPTED
    assert seen == [(1, 0)]  # MAIL FROM was answered; DATA had not been sent yet
    assert server.data_commands == 1


def test_before_commit_raising_means_the_server_gets_nothing(server: RecordingSmtpServer) -> None:
    def lost_lock() -> None:
        raise RuntimeError("lease lost")

    delivery = transport_for(server).send(make_email(), before_commit=lost_lock)
    assert delivery.outcome is Outcome.TRANSIENT
    assert "lease lost" in delivery.detail
    assert server.accepted() == []
    assert server.data_commands == 0
    # The server stays usable: the aborted session did not leave it in a bad state.
    assert transport_for(server).send(make_email()).outcome is Outcome.ACCEPTED
    assert len(server.accepted()) == 1


# -- interrupted by a stopping worker (issue 20) ----------------------------------------------

PATIENT = 3000.0  # seconds: a transport timeout no test waits for; only the cut ends these sends


def _send_in_thread(transport: SmtpTransport) -> tuple[threading.Thread, list[Delivery]]:
    got: list[Delivery] = []
    thread = threading.Thread(target=lambda: got.append(transport.send(make_email())), daemon=True)
    thread.start()
    return thread, got


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the server never got that far"
        time.sleep(0.01)  # polling the server's state, with a generous deadline


@pytest.mark.parametrize(
    ("server", "reached", "outcome", "taken"),
    [
        # Stuck at MAIL FROM: nothing can have been taken, so it is safe to send again later.
        (lambda: RecordingSmtpServer(command_delay=PATIENT), lambda s: s.transactions, Outcome.TRANSIENT, 0),
        # Stuck after the final dot: the server has it, the client cannot know.
        (HangAfterDataServer, lambda s: s.accepted(), Outcome.UNKNOWN, 1),
    ],
    ids=["before-data", "after-the-final-dot"],
)
def test_interrupt_ends_the_send_of_that_thread_at_once_with_what_is_known(
    server: Callable[[], SmtpTestServer],
    reached: Callable[[SmtpTestServer], list[object]],
    outcome: Outcome,
    taken: int,
) -> None:
    with server() as stuck:
        transport = transport_for(stuck, timeout=PATIENT)
        thread, got = _send_in_thread(transport)
        _until(lambda: len(reached(stuck)) == 1)
        assert thread.ident is not None
        transport.interrupt(thread.ident)
        thread.join(60)
        assert not thread.is_alive(), "the cut did not end the send"
        assert [d.outcome for d in got] == [outcome], got
        assert len(stuck.accepted()) == taken


def test_an_interrupt_before_the_send_refuses_it_before_mail_from_then_is_spent(
    server: RecordingSmtpServer,
) -> None:
    transport = transport_for(server)
    transport.interrupt(threading.get_ident())
    refused = transport.send(make_email())
    assert refused.outcome is Outcome.TRANSIENT and "interrupted" in refused.detail
    assert server.transactions == [] and server.accepted() == []
    # The request was for that send: the thread's next one goes out as usual.
    assert transport.send(make_email()).outcome is Outcome.ACCEPTED


def test_an_interrupt_for_another_thread_leaves_this_send_alone(server: RecordingSmtpServer) -> None:
    transport = transport_for(server)
    other = threading.Thread(target=lambda: None)
    other.start()
    other.join()
    assert other.ident is not None and other.ident != threading.get_ident()
    transport.interrupt(other.ident)
    assert transport.send(make_email()).outcome is Outcome.ACCEPTED


# -- AUTH and TLS ---------------------------------------------------------------------------


def test_auth_over_cleartext_when_explicitly_allowed() -> None:
    with RecordingSmtpServer(auth=("ada", SECRET)) as authed:
        delivery = transport_for(authed).send(make_email())  # url() adds starttls=off
        assert delivery.outcome is Outcome.ACCEPTED, delivery
        assert authed.auth_attempts[-1][1] is True
        assert authed.accepted()[0].authenticated


def test_credentials_are_never_sent_unencrypted_by_default() -> None:
    with RecordingSmtpServer(auth=("ada", SECRET)) as authed:
        delivery = transport_for(authed, starttls="auto").send(make_email())
        assert delivery.outcome is Outcome.TRANSIENT
        assert "unencrypted" in delivery.detail
        assert authed.auth_attempts == []


def test_missing_credentials_are_a_configuration_problem_not_a_bounce() -> None:
    with RecordingSmtpServer(auth=("ada", SECRET)) as authed:
        delivery = SmtpTransport(f"smtp://127.0.0.1:{authed.port}?timeout=5").send(make_email())
        assert delivery.outcome is Outcome.TRANSIENT
        assert "530" in delivery.detail
        assert delivery.blame is Blame.SENDER  # the mailbox's problem: the worker pauses it


def test_wrong_password_is_transient_and_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with RecordingSmtpServer(auth=("ada", "the-right-one")) as authed:
        transport = transport_for(authed, user="ada", password=SECRET)
        delivery = transport.send(make_email())
        assert delivery.outcome is Outcome.TRANSIENT
        assert delivery.blame is Blame.SENDER
        assert "535" in delivery.detail
        assert authed.accepted() == []
        assert_secret_absent(transport, [delivery], caplog)


def test_the_password_never_appears_in_repr_errors_or_logs(
    caplog: pytest.LogCaptureFixture, certs: CertPair
) -> None:
    caplog.set_level(logging.DEBUG)
    deliveries: list[Delivery] = []
    with RecordingSmtpServer(auth=("ada", SECRET), tls=certs) as authed:
        transport = transport_for(authed)
        deliveries.append(transport.send(make_email()))
        deliveries.append(transport.send(make_email(), before_commit=_raise(SECRET)))
        assert deliveries[0].outcome is Outcome.ACCEPTED
    # A refused connection, too: the server is gone now.
    deliveries.append(transport.send(make_email()))
    assert deliveries[-1].outcome is Outcome.TRANSIENT
    assert_secret_absent(transport, deliveries, caplog)
    assert "***" in repr(transport)


def _raise(text: str) -> Callable[[], None]:
    def hook() -> None:
        raise RuntimeError(f"echoing {text}")

    return hook


def assert_secret_absent(
    transport: SmtpTransport, deliveries: list[Delivery], caplog: pytest.LogCaptureFixture
) -> None:
    forms = [SECRET, base64.b64encode(SECRET.encode()).decode(), "s3cr%25t"]
    texts = [repr(transport), str(transport.settings), repr(transport.settings)]
    texts += [f"{d!r} {d.detail} {d.ref}" for d in deliveries]
    texts += [record.getMessage() for record in caplog.records]
    for text in texts:
        for form in forms:
            assert form not in text, text
    assert any(r.name.startswith("replyguard") for r in caplog.records)


def test_starttls_is_used_when_offered(certs: CertPair) -> None:
    with RecordingSmtpServer(auth=("ada", SECRET), tls=certs) as secure:
        delivery = transport_for(secure).send(make_email())  # starttls=auto, verify=false
        assert delivery.outcome is Outcome.ACCEPTED, delivery
        received = secure.accepted()[0]
        assert received.tls
        assert received.authenticated


def test_starttls_verifies_the_certificate_by_default(certs: CertPair) -> None:
    with RecordingSmtpServer(tls=certs) as secure:
        verifying = SmtpTransport(f"smtp://127.0.0.1:{secure.port}?timeout=5")
        refused = verifying.send(make_email())
        assert refused.outcome is Outcome.TRANSIENT
        assert "CERTIFICATE_VERIFY_FAILED" in refused.detail

        url = f"smtp://127.0.0.1:{secure.port}?timeout=5&cafile={certs.cert}"
        trusting = SmtpTransport(url)
        assert trusting.send(make_email()).outcome is Outcome.ACCEPTED
        assert secure.accepted()[0].tls


def test_starttls_require_refuses_a_server_without_it(server: RecordingSmtpServer) -> None:
    delivery = transport_for(server, starttls="require").send(make_email())
    assert delivery.outcome is Outcome.TRANSIENT
    assert "STARTTLS" in delivery.detail
    assert server.accepted() == []


def test_starttls_off_sends_in_cleartext_even_when_offered(certs: CertPair) -> None:
    with RecordingSmtpServer(tls=certs) as secure:
        assert transport_for(secure, starttls="off").send(make_email()).outcome is Outcome.ACCEPTED
        assert not secure.accepted()[0].tls


def test_smtps_speaks_tls_from_the_first_byte(certs: CertPair) -> None:
    with RecordingSmtpServer(auth=("ada", SECRET), tls=certs, implicit_tls=True) as secure:
        url = secure.url()
        assert url.startswith("smtps://")
        transport = SmtpTransport(url, tls_context=certs.client_context())
        delivery = transport.send(make_email())
        assert delivery.outcome is Outcome.ACCEPTED, delivery
        assert secure.accepted()[0].authenticated


# -- the fault schedule and the shared log, end to end --------------------------------------


def test_seeded_faults_never_hide_an_acceptance(tmp_path: Path) -> None:
    """TRANSIENT and PERMANENT must mean "not accepted"; ACCEPTED must mean accepted."""
    weights = {
        Behaviour.ACCEPT: 4.0,
        Behaviour.TEMPFAIL_RCPT: 1.0,
        Behaviour.REJECT_RCPT: 1.0,
        Behaviour.TEMPFAIL_DATA: 1.0,
        Behaviour.TEMPFAIL_END: 1.0,
        Behaviour.REJECT_END: 1.0,
        Behaviour.DROP_MID_DATA: 1.0,
        Behaviour.DROP_AFTER_ACCEPT: 1.0,
        Behaviour.HANG_ON_QUIT: 1.0,
    }
    schedule = seeded_schedule(20261130, weights)
    log = tmp_path / "accepted.jsonl"
    with SmtpTestServer(schedule=schedule, log_path=log) as faulty:
        transport = transport_for(faulty, timeout=FAST)
        outcomes = {}
        for _ in range(30):
            email = make_email()
            outcomes[email.send_key] = transport.send(email).outcome
        planned = list(faulty.transactions)

    assert planned == [schedule(n) for n in range(30)]
    assert len(set(planned)) >= 6  # the seed really exercises several faults
    logged = {record["send_key"] for record in read_log(log)}
    assert len(logged) == len(read_log(log))
    for (key, outcome), behaviour in zip(outcomes.items(), planned, strict=True):
        if outcome is Outcome.ACCEPTED:
            assert key in logged
        elif outcome in (Outcome.TRANSIENT, Outcome.PERMANENT):
            assert key not in logged, (behaviour, outcome)
        assert (key in logged) == (behaviour in ACCEPTING)


# -- configuration --------------------------------------------------------------------------


def test_smtp_url_parsing() -> None:
    s = SmtpSettings.from_url("smtp://ada%40example.test:p%2Fw%3Ad@mail.example.test")
    assert (s.host, s.port, s.implicit_tls, s.starttls) == ("mail.example.test", 587, False, "auto")
    assert (s.username, s.password) == ("ada@example.test", "p/w:d")
    assert (s.timeout, s.verify) == (30.0, True)

    s = SmtpSettings.from_url("smtps://u:p@[::1]?timeout=2.5&verify=false")
    assert (s.host, s.port, s.implicit_tls, s.timeout, s.verify) == ("::1", 465, True, 2.5, False)
    assert s.target() == "smtps://u:***@[::1]:465"

    s = SmtpSettings.from_url("smtp://relay:2525?starttls=require")
    assert (s.port, s.starttls, s.username, s.password) == (2525, "require", None, None)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("smtp://u:hunter22@h:notaport", "malformed"),
        ("smtp://u:hunter22@h?starttls=maybe", "starttls must be"),
        ("smtp://u:hunter22@h?timeout=-1", "timeout must be"),
        ("smtp://u:hunter22@h?verify=perhaps", "verify must be"),
        ("smtp://u:hunter22@h?bogus=1", "unknown SMTP URL option"),
        ("smtp://u:hunter22@h?timeout=1&timeout=2", "repeated"),
        ("smtps://u:hunter22@h?starttls=off", "does not apply"),
        ("smtp://u:hunter22@", "no host"),
        ("smtp://u:hunter22@h/path", "no path"),
        ("smtp://u:hun/ter22@h", "malformed"),
    ],
)
def test_bad_smtp_urls_are_explained_without_the_password(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        SmtpSettings.from_url(url)
    assert "hunter22" not in str(caught.value)
    assert "ter22" not in str(caught.value)


def test_make_transport_builds_each_kind(tmp_path: Path) -> None:
    maildir = make_transport(f"maildir:{tmp_path / 'out'}")
    assert isinstance(maildir, MaildirTransport)
    assert maildir.root == tmp_path / "out"
    assert isinstance(make_transport("null:"), NullTransport)
    smtp = make_transport("smtp://u:pw@mail.example.test:2525?timeout=3")
    assert isinstance(smtp, SmtpTransport)
    assert (smtp.settings.port, smtp.settings.timeout) == (2525, 3.0)
    smtps = make_transport("smtps://mail.example.test")
    assert isinstance(smtps, SmtpTransport)
    assert smtps.settings.implicit_tls


@pytest.mark.parametrize(
    "spec",
    ["ftp://u:hunter22@h", "u:hunter22@h", "hunter22", "maildir:", "smtp:hunter22", "null:x"],
)
def test_make_transport_rejects_unknown_specs_without_echoing_them(spec: str) -> None:
    with pytest.raises(ValueError, match=r"maildir:PATH|needs a directory") as caught:
        make_transport(spec)
    assert "hunter22" not in str(caught.value)
    assert "smtp://" in str(caught.value)


def test_make_transport_smtp_errors_hide_the_password() -> None:
    with pytest.raises(ValueError, match="unknown SMTP URL option") as caught:
        make_transport("smtp://u:hunter22@h?nope=1")
    assert "hunter22" not in str(caught.value)
