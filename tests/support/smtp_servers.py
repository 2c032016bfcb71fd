"""Real SMTP servers on loopback, used as oracles for the transport, the worker and the faults.

Each server is an aiosmtpd `Controller` on 127.0.0.1 with an ephemeral port, in a
background thread, used as a context manager. What it does with each mail transaction is a
`Behaviour`, picked when MAIL FROM arrives: fixed (`server.behaviour = ...`) or from a
schedule (`server.schedule = seeded_schedule(7, {...})`) that can change at any time.

Every message the server *accepted* (took responsibility for, whether or not the client
heard the 250) is recorded in `server.messages` and, when `log_path` is given, appended as a
JSON line so another process can be checked afterwards with `read_log(path)`. A send key
must never appear twice there.

A note on DROP_MID_DATA: the client sees a failed write only while it is still writing, so a
message that fits in the socket buffers looks like a lost reply (UNKNOWN) to the client,
which is the honest answer. Tests that want TRANSIENT send a message of several megabytes.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, urlencode

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from tests.support.tls import CertPair


class Behaviour(enum.StrEnum):
    ACCEPT = "accept"  # 250 after the final dot
    TEMPFAIL_RCPT = "tempfail_rcpt"  # 451 to RCPT TO
    REJECT_RCPT = "reject_rcpt"  # 550 to RCPT TO
    TEMPFAIL_DATA = "tempfail_data"  # 451 to the DATA command itself
    REJECT_DATA = "reject_data"  # 554 to the DATA command itself
    TEMPFAIL_END = "tempfail_end"  # 451 after the final dot (not accepted)
    REJECT_END = "reject_end"  # 550 after the final dot (not accepted)
    DROP_MID_DATA = "drop_mid_data"  # read one line of content, then close the connection
    HANG_AFTER_ACCEPT = "hang_after_accept"  # accept and record, then never answer
    DROP_AFTER_ACCEPT = "drop_after_accept"  # accept and record, then close without a reply
    HANG_ON_QUIT = "hang_on_quit"  # accept with 250, then never answer QUIT
    MAILBOX_FULL_RCPT = "mailbox_full_rcpt"  # 452 4.2.2 to RCPT TO
    MAILBOX_FULL_END = "mailbox_full_end"  # 552 5.2.2 after the final dot
    UNKNOWN_USER_END = "unknown_user_end"  # 550 5.1.1 after the final dot (recipients checked late)
    REJECT_SENDER = "reject_sender"  # 550 5.7.1 to MAIL FROM: our sender is refused
    RELAY_DENIED = "relay_denied"  # 554 5.7.1 relay access denied to RCPT TO
    SLOW_ACCEPT = "slow_accept"  # answers MAIL FROM after `slow_delay` seconds, then accepts


#: Behaviours after which the server holds the message: it is in `messages` and the log.
ACCEPTING = frozenset(
    {
        Behaviour.ACCEPT,
        Behaviour.SLOW_ACCEPT,
        Behaviour.HANG_AFTER_ACCEPT,
        Behaviour.DROP_AFTER_ACCEPT,
        Behaviour.HANG_ON_QUIT,
    }
)

#: Picks the behaviour of the n-th mail transaction (n counts from 0 per server).
Schedule = Callable[[int], Behaviour]
#: Picks a behaviour by recipient address at RCPT TO (None: keep the transaction's own).
ByRecipient = Callable[[str], Behaviour | None]


def seeded_schedule(seed: int | str, weights: Mapping[Behaviour, float]) -> Schedule:
    """A reproducible random schedule: transaction n always gets the same behaviour."""
    choices, cum = list(weights), list(itertools.accumulate(weights.values()))

    def pick(n: int) -> Behaviour:
        # A generator per transaction keeps the choice independent of timing and threads.
        return random.Random(f"{seed}:{n}").choices(choices, cum_weights=cum)[0]

    return pick


@dataclass(frozen=True)
class ReceivedMessage:
    queue_id: str
    message_id: str | None
    send_key: str | None
    mail_from: str
    rcpt_tos: tuple[str, ...]
    data_at: float  # time.time() when the DATA command arrived
    accepted_at: float  # time.time() when the server took the message
    behaviour: str
    tls: bool  # whether the session was encrypted (STARTTLS or implicit TLS)
    authenticated: bool
    content: bytes = field(repr=False)

    def message(self) -> EmailMessage:
        parsed = message_from_bytes(self.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed

    def log_record(self) -> dict[str, Any]:
        record = asdict(self)
        del record["content"]
        record["rcpt_tos"] = list(self.rcpt_tos)
        record["size"] = len(self.content)
        return record


def read_log(path: Path) -> list[dict[str, Any]]:
    """The accepted messages a server (maybe in another process) appended to `path`."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class _Session(SMTP):
    """aiosmtpd's SMTP protocol with the faults a real server can show."""

    def __init__(self, owner: SmtpTestServer, **kwargs: Any) -> None:
        super().__init__(owner.make_handler(), **kwargs)
        self.owner = owner
        self.behaviour = Behaviour.ACCEPT
        self.data_at = 0.0
        self.quit_hangs = False
        with owner._lock:
            owner._sessions.add(self)
            owner.connections += 1
            owner.peak_connections = max(owner.peak_connections, len(owner._sessions))

    def connection_lost(self, error: Exception | None) -> None:
        with self.owner._lock:
            self.owner._sessions.discard(self)
        super().connection_lost(error)

    async def _handle_client(self) -> None:
        if self.owner.refusing:
            # A relay that is down: it answers the connection with 421 and hangs up.
            with self.owner._lock:
                self.owner.refused_connections += 1
            await self.push("421 4.3.2 Service not available (test server)")
            assert self.transport is not None
            self.transport.close()
            return
        await super()._handle_client()  # type: ignore[no-untyped-call]

    async def smtp_MAIL(self, arg: str | None) -> None:
        # AUTH is enforced here, not with aiosmtpd's auth_required, which warns (and so
        # fails the tests) when it is combined with AUTH over cleartext.
        assert self.session is not None
        if self.owner.auth is not None and not self.session.authenticated:
            await self.push("530 5.7.0 Authentication required")
            return
        self.behaviour = self.owner._next_behaviour()
        await asyncio.sleep(self.owner.command_delay)
        if self.behaviour is Behaviour.SLOW_ACCEPT:
            await asyncio.sleep(self.owner.slow_delay)
        if self.behaviour is Behaviour.REJECT_SENDER:
            await self.push("550 5.7.1 Sender address rejected: not owned by user (test server)")
            return
        await super().smtp_MAIL(arg)

    async def smtp_RCPT(self, arg: str | None) -> None:
        await asyncio.sleep(self.owner.command_delay)
        if self.owner.gate is not None:
            # A server that is slow exactly when the test says: RCPT is answered when the
            # test opens the gate (the client's DATA, its point of no return, comes after).
            self.owner.at_gate.set()
            await asyncio.get_running_loop().run_in_executor(None, self.owner.gate.wait, 120)
        if self.owner.by_recipient is not None:
            found = re.search(r"<([^>]*)>", arg or "")
            chosen = self.owner.by_recipient(found[1].lower() if found else "")
            if chosen is not None:
                self.behaviour = chosen
                with self.owner._lock:
                    self.owner.transactions[-1] = chosen
        if self.behaviour is Behaviour.TEMPFAIL_RCPT:
            await self.push("451 4.3.0 Try again later (test server)")
        elif self.behaviour is Behaviour.REJECT_RCPT:
            await self.push("550 5.1.1 No such user (test server)")
        elif self.behaviour is Behaviour.MAILBOX_FULL_RCPT:
            await self.push("452 4.2.2 Mailbox full (test server)")
        elif self.behaviour is Behaviour.RELAY_DENIED:
            await self.push("554 5.7.1 Relay access denied (test server)")
        else:
            await super().smtp_RCPT(arg)

    async def smtp_DATA(self, arg: str) -> None:
        self.data_at = time.time()
        with self.owner._lock:
            self.owner.data_commands += 1
        await asyncio.sleep(self.owner.command_delay)
        if self.behaviour is Behaviour.TEMPFAIL_DATA:
            await self.push("451 4.3.0 Not now (test server)")
        elif self.behaviour is Behaviour.REJECT_DATA:
            await self.push("554 5.7.1 Not from you (test server)")
        elif self.behaviour is Behaviour.DROP_MID_DATA:
            await self.push("354 End data with <CR><LF>.<CR><LF>")
            await self._reader.readuntil(b"\r\n")
            # Closing with unread data makes the kernel reset the connection.
            assert self.transport is not None
            self.transport.close()
        else:
            await super().smtp_DATA(arg)

    async def smtp_RSET(self, arg: str) -> None:
        with self.owner._lock:
            self.owner.rsets += 1
        await super().smtp_RSET(arg)

    async def smtp_QUIT(self, arg: str) -> None:
        if self.quit_hangs:
            await asyncio.Event().wait()  # until the server stops and cancels this task
        await super().smtp_QUIT(arg)


class _Handler:
    def __init__(self, owner: SmtpTestServer) -> None:
        self.owner = owner

    async def handle_DATA(self, server: _Session, session: Session, envelope: Envelope) -> str:
        behaviour = server.behaviour
        if behaviour is Behaviour.TEMPFAIL_END:
            return "451 4.3.0 Queue full, try later (test server)"
        if behaviour is Behaviour.REJECT_END:
            return "550 5.7.1 Content rejected (test server)"
        if behaviour is Behaviour.MAILBOX_FULL_END:
            return "552 5.2.2 Mailbox full (test server)"
        if behaviour is Behaviour.UNKNOWN_USER_END:
            return "550 5.1.1 Recipient address rejected: User unknown in virtual mailbox table (test server)"
        if self.owner.end_delay:
            await asyncio.sleep(self.owner.end_delay)  # a server that takes its time per message
        received = self.owner._record(server, envelope, behaviour)
        if behaviour is Behaviour.HANG_AFTER_ACCEPT:
            await asyncio.Event().wait()
        if behaviour is Behaviour.DROP_AFTER_ACCEPT:
            assert server.transport is not None
            server.transport.close()
            await asyncio.Event().wait()
        server.quit_hangs = behaviour is Behaviour.HANG_ON_QUIT
        return f"250 2.0.0 Ok: queued as {received.queue_id}"


class _Controller(Controller):
    def __init__(self, owner: SmtpTestServer, **kwargs: Any) -> None:
        super().__init__(None, hostname="127.0.0.1", port=0, **kwargs)
        self.owner = owner

    def factory(self) -> SMTP:
        return _Session(self.owner, **self.SMTP_kwargs)

    def _trigger_server(self) -> None:
        # Port 0 asks for an ephemeral port: learn it before aiosmtpd connects to itself.
        assert isinstance(self.server, asyncio.Server)
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()  # type: ignore[no-untyped-call]


class SmtpTestServer:
    """A loopback SMTP server whose behaviour per mail transaction is set by the test.

    `auth=(user, password)` requires AUTH; `tls=CertPair` offers STARTTLS (or, with
    `implicit_tls=True`, speaks TLS from the first byte, as for smtps://). `command_delay`
    makes a slow server: each of MAIL, RCPT and DATA waits that long before its answer.
    `by_recipient` picks the behaviour by recipient address at RCPT TO (an unknown user,
    a full mailbox), overriding the transaction's own.
    """

    default_behaviour = Behaviour.ACCEPT

    def __init__(
        self,
        *,
        behaviour: Behaviour | None = None,
        schedule: Schedule | None = None,
        log_path: Path | None = None,
        auth: tuple[str, str] | None = None,
        tls: CertPair | None = None,
        implicit_tls: bool = False,
        command_delay: float = 0.0,
        by_recipient: ByRecipient | None = None,
    ) -> None:
        self.behaviour = behaviour or self.default_behaviour
        self.schedule = schedule
        self.by_recipient = by_recipient
        self.log_path = log_path
        self.auth = auth
        self.tls = tls
        self.implicit_tls = implicit_tls
        self.command_delay = command_delay  # seconds before answering MAIL, RCPT and DATA
        self.messages: list[ReceivedMessage] = []
        self.transactions: list[Behaviour] = []  # the behaviour each MAIL FROM got
        self.data_commands = 0  # DATA commands received, answered or not
        self.refusing = False  # True: every connection gets 421 at once (a relay that is down)
        self.slow_delay = 0.5  # seconds SLOW_ACCEPT waits before answering MAIL FROM
        self.refused_connections = 0
        self.connections = 0  # connections accepted (each a session)
        self.peak_connections = 0  # the most sessions open at once
        self.end_delay = 0.0  # seconds before the answer to the final dot (latency per message)
        self.rsets = 0  # RSET commands received
        self.gate: threading.Event | None = None  # set: RCPT waits until the test opens it
        self.at_gate = threading.Event()  # a transaction reached the gate
        self.auth_attempts: list[tuple[str, bool]] = []  # (mechanism, success)
        self._lock = threading.Lock()
        self._sessions: set[_Session] = set()
        self._controller: _Controller | None = None

    def make_handler(self) -> _Handler:
        """The handler of each session (a subclass may add `auth_MECHANISM` methods)."""
        return _Handler(self)

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> Self:
        kwargs: dict[str, Any] = {"server_hostname": "replyguard-test", "ready_timeout": 10}
        if self.auth is not None:
            kwargs |= {
                "authenticator": self._authenticate,
                "auth_require_tls": self.tls is not None and not self.implicit_tls,
            }
        if self.tls is not None and self.implicit_tls:
            kwargs["ssl_context"] = self.tls.server_context()
        elif self.tls is not None:
            kwargs["tls_context"] = self.tls.server_context()
        self._controller = _Controller(self, **kwargs)
        self._controller.start()
        with self._lock:  # not the controller's own readiness check
            self.connections = self.peak_connections = 0
        return self

    def stop(self) -> None:
        controller, self._controller = self._controller, None
        if controller is None:
            return
        # Close every open session and let its task finish inside the loop, so nothing is
        # left pending or unclosed when aiosmtpd stops the loop (that would warn).
        future = asyncio.run_coroutine_threadsafe(self._close_sessions(), controller.loop)
        future.result(timeout=10)
        controller.stop()

    async def _close_sessions(self) -> None:
        tasks = []
        for session in list(self._sessions):
            if session.transport is not None:
                session.transport.close()
            task = session._handler_coroutine
            if task is not None:
                task.cancel()
                tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.01)  # let connection_lost callbacks run

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what the tests read ---------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._controller is not None, "server not started"
        return int(self._controller.port)

    def url(self, *, user: str | None = None, password: str | None = None, **options: Any) -> str:
        """An smtp:// (or smtps://) URL for this server, for SmtpTransport or a worker.

        Uses the server's own credentials unless given others. Without TLS but with AUTH
        it adds starttls=off (the transport refuses cleartext AUTH otherwise); with TLS it
        adds verify=false (the certificate is self-signed). `options` win.
        """
        if self.auth is not None and user is None:
            user, password = self.auth
        defaults: dict[str, Any] = {}
        if self.tls is None and self.auth is not None:
            defaults["starttls"] = "off"
        if self.tls is not None:
            defaults["verify"] = "false"
        query = urlencode({**defaults, **options})
        userinfo = ""
        if user is not None:
            userinfo = f"{quote(user, safe='')}:{quote(password or '', safe='')}@"
        scheme = "smtps" if self.implicit_tls else "smtp"
        return f"{scheme}://{userinfo}127.0.0.1:{self.port}" + (f"?{query}" if query else "")

    def accepted(self) -> list[ReceivedMessage]:
        with self._lock:
            return list(self.messages)

    def wait_for_messages(self, count: int, timeout: float = 120.0) -> list[ReceivedMessage]:
        """The accepted messages once there are at least `count` (or whatever came in time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            messages = self.accepted()
            if len(messages) >= count:
                return messages
            time.sleep(0.01)
        return self.accepted()

    # -- called from the server thread -----------------------------------------------
    def _next_behaviour(self) -> Behaviour:
        with self._lock:
            n = len(self.transactions)
            behaviour = self.schedule(n) if self.schedule is not None else self.behaviour
            self.transactions.append(behaviour)
            return behaviour

    def _record(self, server: _Session, envelope: Envelope, behaviour: Behaviour) -> ReceivedMessage:
        content = bytes(envelope.original_content or b"")
        parsed = message_from_bytes(content, policy=policy.default)
        with self._lock:
            received = ReceivedMessage(
                queue_id=f"RG{len(self.messages) + 1:06d}",
                message_id=parsed["Message-ID"],
                send_key=parsed["X-Replyguard-Send-Key"],
                mail_from=str(envelope.mail_from),
                rcpt_tos=tuple(envelope.rcpt_tos),
                data_at=server.data_at,
                accepted_at=time.time(),
                behaviour=str(behaviour),
                tls=self.implicit_tls or server._tls_protocol is not None,
                authenticated=bool(server.session and server.session.authenticated),
                content=content,
            )
            self.messages.append(received)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(received.log_record()) + "\n")
        return received

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        assert self.auth is not None
        user, password = self.auth
        ok = isinstance(data, LoginPassword) and (
            data.login == user.encode() and data.password == password.encode()
        )
        with self._lock:
            self.auth_attempts.append((mechanism, ok))
        return AuthResult(success=ok, handled=False)


class RecordingSmtpServer(SmtpTestServer):
    """The oracle: accepts everything and records it."""


class TempFailServer(SmtpTestServer):
    """Answers 451 to the DATA command (use `behaviour=TEMPFAIL_RCPT` for RCPT)."""

    default_behaviour = Behaviour.TEMPFAIL_DATA


class RejectServer(SmtpTestServer):
    """Answers 550 to RCPT TO (use `behaviour=REJECT_DATA` / `REJECT_END` for later)."""

    default_behaviour = Behaviour.REJECT_RCPT


class DropMidDataServer(SmtpTestServer):
    """Reads one line of the content, then drops the connection."""

    default_behaviour = Behaviour.DROP_MID_DATA


class HangAfterDataServer(SmtpTestServer):
    """Accepts and records the message, then never answers the final dot."""

    default_behaviour = Behaviour.HANG_AFTER_ACCEPT


class HangOnQuitServer(SmtpTestServer):
    """Accepts with 250, then never answers QUIT."""

    default_behaviour = Behaviour.HANG_ON_QUIT
