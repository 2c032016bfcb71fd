"""SMTP delivery that knows exactly when the server may have taken the message.

The moment that matters is the final CRLF.CRLF of DATA. Until it is fully written the
server cannot have accepted the message, so any failure is safe to retry; once it is
written, a lost reply means the message may be on its way and must never be resent
blindly. `smtplib.sendmail` hides that moment, so the DATA phase is done here by hand.

| where it fails                                         | outcome     |
|--------------------------------------------------------|-------------|
| connect, DNS, TLS, greeting, EHLO, STARTTLS, AUTH      | TRANSIENT   |
| MAIL / RCPT / DATA command: 4xx, timeout, disconnect   | TRANSIENT   |
| the time budget runs out before the content is written | TRANSIENT   |
| MAIL / RCPT / DATA command: 5xx (but 530, auth needed) | PERMANENT   |
| `before_commit` raises (nothing sent yet)              | TRANSIENT   |
| socket error while writing the content (dot unsent)    | TRANSIENT   |
| reply to the final dot: 2xx / 4xx / 5xx                | ACCEPTED / TRANSIENT / PERMANENT |
| reply to the final dot: timeout, reset, garbage        | UNKNOWN     |

Session-level refusals (greeting, EHLO, STARTTLS, AUTH) are TRANSIENT even when they are
5xx: they say nothing about this message, and calling them permanent would fail every
step of every lead over one wrong password.

Every refusal also says whose problem it is (`Delivery.blame`, decided by the pure
`domain.smtp_answers.classify`): the recipient address (`550 5.1.1`: a hard bounce), a full
mailbox (`452`, `552 5.2.2`: a soft bounce), or our own mailbox (a wrong password, a refused
sender, relaying denied, a missing STARTTLS we require: the worker pauses the mailbox). A
refusal classified as temporary (a full mailbox, our own mailbox) is TRANSIENT even when
its code is 5xx.

Connections are reused inside a `reusing()` scope (the worker opens one per pass): after a
message the server accepted, its connection waits in the transport's pool for the next send
from any thread, which starts it with RSET (a fresh connection if RSET fails: nothing was
said about any message yet). Any other outcome, or `reuse` messages on one connection
(`?reuse=N` in the URL, 100 by default), closes it: a connection that saw an error is never
used again. Outside a scope every send has its own session, as before. `opened` counts the
connections made, for the benchmark and the tests.

`timeout` is a budget for the whole send, from connect to the reply to the final dot (each
wait gets what is left), so a slow server cannot hold the worker's lead lock much longer
than it; the best-effort QUIT afterwards adds at most `quit_timeout`. A stopping worker need
not wait that long: `interrupt(thread)` shuts that thread's connection down from another
thread, and the send in progress returns at once with what the table above says of the
point it had reached (only the TCP connect and the greeting are not cut: they are bounded by
the budget).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, NoReturn
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from replyguard.adapters.oauth import GrantRevoked, GrantUnusable, TokenSource, TokenUnavailable, xoauth2
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.domain.addresses import normalize_address
from replyguard.domain.outgoing import OutgoingEmail, message_bytes
from replyguard.domain.smtp_answers import Blame, Stage, classify

_log = logging.getLogger(__name__)

StartTls = Literal["require", "auto", "off"]
_OPTIONS = ("starttls", "timeout", "verify", "cafile", "ehlo", "reuse")
#: smtp:// (STARTTLS when offered), smtp+starttls:// (STARTTLS required), smtps:// (TLS from the start).
SCHEMES = ("smtp", "smtp+starttls", "smtps")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def redact_url(url: str) -> str:
    """`url` with any password replaced by `***`, safe to show in messages and logs.

    Everything before the last `@` counts as user info, so a password holding an unescaped
    `/`, `?` or `#` (which would fool a URL parser) is hidden too.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    userinfo, _, hostpart = rest.rpartition("@")
    user = re.split(r"[:/?#]", userinfo, maxsplit=1)[0]
    return f"{scheme}://{user}:***@{hostpart}"


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str
    port: int
    implicit_tls: bool = False
    starttls: StartTls = "auto"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 30.0  # seconds for the whole send, connect to the final reply
    verify: bool = True
    cafile: str | None = None
    ehlo_name: str | None = None  # None: smtplib uses the host's FQDN
    #: An OAuth2 mailbox's access token, asked for at each login (AUTH XOAUTH2 instead of a
    #: password); raises `adapters.oauth.TokenUnavailable` or its GrantRevoked.
    oauth_token: TokenSource | None = field(default=None, repr=False, compare=False)
    #: Messages one connection carries before it is closed (inside a `reusing()` scope).
    reuse: int = 100

    @classmethod
    def from_url(cls, url: str) -> SmtpSettings:
        """Parse `smtp://user:pass@host:port?starttls=auto&timeout=30&verify=true`.

        `smtps://` means implicit TLS. User and password are URL-decoded. Errors never
        contain the password.
        """
        shown = redact_url(url)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise ValueError(f"malformed SMTP URL {shown}") from None
        if parts.scheme not in SCHEMES:
            raise ValueError(f"an SMTP URL starts with smtp://, smtp+starttls:// or smtps://, got {shown}")
        if not parts.hostname:
            raise ValueError(f"SMTP URL has no host: {shown}")
        if parts.path not in ("", "/") or parts.fragment:
            raise ValueError(f"SMTP URL takes no path or fragment: {shown}")
        implicit = parts.scheme == "smtps"
        options = _parse_options(parts.query, shown)
        if implicit and "starttls" in options:
            raise ValueError(f"starttls does not apply to smtps:// (TLS from the start): {shown}")
        if parts.scheme == "smtp+starttls":
            # Submission with STARTTLS required (port 587): the scheme says it, not an option.
            if options.get("starttls", "require") != "require":
                raise ValueError(f"smtp+starttls:// always requires STARTTLS: {shown}")
            options["starttls"] = "require"
        return cls(
            host=parts.hostname,
            port=port or (465 if implicit else 587),
            implicit_tls=implicit,
            starttls=_starttls(options.get("starttls", "auto"), shown),
            username=unquote(parts.username) if parts.username is not None else None,
            password=unquote(parts.password) if parts.password is not None else None,
            timeout=_timeout(options.get("timeout", "30"), shown),
            verify=_flag(options.get("verify", "true"), "verify", shown),
            cafile=options.get("cafile") or None,
            ehlo_name=options.get("ehlo") or None,
            reuse=_reuse(options.get("reuse", "100"), shown),
        )

    def target(self) -> str:
        """Where this connects, without the password: for logs, errors and repr."""
        scheme = "smtps" if self.implicit_tls else "smtp+starttls" if self.starttls == "require" else "smtp"
        user = f"{quote(self.username, safe='')}:***@" if self.username is not None else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{user}{host}:{self.port}"


def _parse_options(query: str, shown: str) -> dict[str, str]:
    pairs = parse_qsl(query, keep_blank_values=True)
    options = dict(pairs)
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"unknown SMTP URL option(s) {unknown} in {shown}; known: {_OPTIONS}")
    if len(options) != len(pairs):
        raise ValueError(f"an SMTP URL option is repeated in {shown}")
    return options


def _starttls(value: str, shown: str) -> StartTls:
    if value == "require":
        return "require"
    if value == "off":
        return "off"
    if value == "auto":
        return "auto"
    raise ValueError(f"starttls must be require, auto or off in {shown}")


def _timeout(value: str, shown: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 3600:
        raise ValueError(f"timeout must be a number of seconds in (0, 3600) in {shown}")
    return seconds


def _reuse(value: str, shown: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 100_000:
        raise ValueError(f"reuse must be a number of messages from 1 to 100000 in {shown}")
    return int(value)


def _flag(value: str, name: str, shown: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be true or false in {shown}")


class _Stop(Exception):
    """Ends a session early with a known outcome."""

    def __init__(self, outcome: Outcome, detail: str, blame: Blame = Blame.NONE) -> None:
        super().__init__(detail)
        self.delivery = Delivery(outcome, detail, blame=blame)


_STAGES = {"greeting": Stage.SESSION, "session setup": Stage.SESSION, "MAIL FROM": Stage.MAIL}
_STAGES |= {"RCPT TO": Stage.RCPT, "DATA": Stage.DATA}


def _verdict(stage: Stage, code: int, text: str) -> tuple[Outcome, Blame]:
    # 530 is "authentication required" (RFC 4954): a configuration problem, wherever it comes.
    verdict = classify(stage, code, text)
    outcome = Outcome.TRANSIENT if verdict.temporary or not 500 <= code < 600 else Outcome.PERMANENT
    return outcome, verdict.blame


def _refuse(stage: str, code: int, reply: bytes | str) -> NoReturn:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
    outcome, blame = _verdict(_STAGES[stage], code, text)
    raise _Stop(outcome, f"{stage} refused: {code} {text}".strip(), blame)


def wire_payload(data: bytes) -> bytes:
    """`data` as DATA content: CRLF line ends, dot-stuffed, ending in CRLF.CRLF."""
    data = re.sub(rb"\r\n|\r|\n", b"\r\n", data)
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


@dataclass(eq=False)
class _Session:
    """An open, logged-in connection and how many messages it has carried."""

    conn: smtplib.SMTP
    sent: int = 0


class SmtpTransport:
    """SMTP submission. One session per send, or, inside `reusing()`, pooled connections that
    carry several messages (RSET between them, closed after any error)."""

    can_probe = False

    def __init__(
        self,
        settings: SmtpSettings | str,
        *,
        tls_context: ssl.SSLContext | None = None,
        quit_timeout: float = 1.0,
    ) -> None:
        if isinstance(settings, str):
            settings = SmtpSettings.from_url(settings)
        self.settings = settings
        self.quit_timeout = min(quit_timeout, settings.timeout)
        self._tls = tls_context or _client_tls_context(settings)
        # The socket of each thread's send in progress, and the threads asked to stop (one
        # transport may serve several threads: the worker's send slots, `replyguard up`'s
        # notices).
        self._lock = threading.Lock()
        self._live: dict[int, socket.socket] = {}
        self._interrupted: set[int] = set()
        # Connections waiting for the next message (only while a `reusing()` scope is open).
        self._idle: list[_Session] = []
        self._scopes = 0
        #: Connections opened so far (the benchmark's connections per 1,000 emails).
        self.opened = 0

    def __repr__(self) -> str:
        return f"SmtpTransport({self.settings.target()!r})"

    @contextlib.contextmanager
    def reusing(self) -> Iterator[None]:
        """Keep connections open between sends while the scope lasts (scopes nest and may be
        opened from several threads); when the last one ends, the idle ones are closed."""
        with self._lock:
            self._scopes += 1
        try:
            yield
        finally:
            with self._lock:
                self._scopes -= 1
                idle = self._idle if self._scopes == 0 else []
                if self._scopes == 0:
                    self._idle = []
            for session in idle:
                self._hang_up(session.conn, polite=True)

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        payload = wire_payload(message_bytes(email))
        session: _Session | None = None
        keep, polite = False, True
        deadline = time.monotonic() + self.settings.timeout
        me = threading.get_ident()
        try:
            session = self._session(deadline)
            self._follow(me, session.conn)
            delivery = self._transact(session.conn, email, payload, before_commit, deadline)
            keep = delivery.outcome is Outcome.ACCEPTED
            polite = delivery.outcome is not Outcome.UNKNOWN
        except _Stop as stop:
            delivery = stop.delivery
        finally:
            with self._lock:
                self._live.pop(me, None)
                interrupted = me in self._interrupted
                self._interrupted.discard(me)
            if session is not None:
                self._done(session, keep=keep and not interrupted, polite=polite and not interrupted)
        delivery = Delivery(delivery.outcome, self._scrub(delivery.detail), delivery.ref, delivery.blame)
        _log.info(
            "smtp send %s via %s: %s (%s)",
            email.send_key,
            self.settings.target(),
            delivery.outcome,
            delivery.detail,
        )
        return delivery

    def _session(self, deadline: float) -> _Session:
        """An idle pooled connection that answers RSET, or a new one."""
        while True:
            with self._lock:
                session = self._idle.pop() if self._idle else None
            if session is None:
                conn = self._open(deadline)
                with self._lock:
                    self.opened += 1
                return _Session(conn)
            try:
                _arm(session.conn, deadline, "RSET")
                code, _ = session.conn.rset()
            except (OSError, smtplib.SMTPException):
                code = 0
            if code == 250:
                return session
            # Closed by the server while idle (or it refuses RSET): nothing was said about any
            # message on it yet, so a fresh connection is as safe as the first one.
            self._hang_up(session.conn, polite=False)

    def _done(self, session: _Session, *, keep: bool, polite: bool) -> None:
        """After a send: back to the pool (accepted, a scope is open, under `reuse`), or closed.
        Any other outcome closes it (QUIT only when the last reply was understood)."""
        session.sent += 1
        with self._lock:
            pooled = keep and self._scopes > 0 and session.sent < self.settings.reuse
            if pooled:
                self._idle.append(session)
        if not pooled:
            self._hang_up(session.conn, polite=polite)

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN  # SMTP cannot prove that a message did not go out

    def check(self) -> Delivery:
        """Connect, secure and log in as for a send, then QUIT: nothing is sent. ACCEPTED when
        all of it worked (the detail says how), otherwise what failed, in words."""
        deadline = time.monotonic() + self.settings.timeout
        try:
            conn = self._open(deadline)
        except _Stop as stop:
            delivery = stop.delivery
            return Delivery(delivery.outcome, self._scrub(delivery.detail), blame=delivery.blame)
        secured = "TLS" if self.settings.implicit_tls or isinstance(conn.sock, ssl.SSLSocket) else "no TLS"
        login = f"logged in as {self.settings.username}" if self.settings.username else "no login"
        self._hang_up(conn, polite=True)
        return Delivery(Outcome.ACCEPTED, f"connected to {self.settings.target()} ({secured}), {login}")

    def interrupt(self, thread: int) -> None:
        """See `transports.base.Interruptible`: shut the thread's connection down (both ways),
        which wakes its blocked read or write at once."""
        with self._lock:
            self._interrupted.add(thread)
            sock = self._live.get(thread)
        if sock is not None:
            _shut(sock)

    def _follow(self, thread: int, conn: smtplib.SMTP) -> None:
        """Register the connection of `thread`'s send, or end it now if a stop came first."""
        with self._lock:
            stopped = thread in self._interrupted
            if not stopped and conn.sock is not None:
                self._live[thread] = conn.sock
        if stopped:
            conn.close()
            raise _Stop(Outcome.TRANSIENT, "interrupted before MAIL FROM: the sender is stopping")

    def close(self) -> None:
        """Close the idle pooled connections (a send in progress closes its own)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for session in idle:
            self._hang_up(session.conn, polite=True)

    def _open(self, deadline: float) -> smtplib.SMTP:
        s = self.settings
        try:
            if s.implicit_tls:
                conn: smtplib.SMTP = smtplib.SMTP_SSL(
                    s.host, s.port, s.ehlo_name, timeout=s.timeout, context=self._tls
                )
            else:
                conn = smtplib.SMTP(s.host, s.port, s.ehlo_name, timeout=s.timeout)
        except smtplib.SMTPConnectError as exc:
            _refuse("greeting", exc.smtp_code, exc.smtp_error)
        except (OSError, smtplib.SMTPException) as exc:
            raise _Stop(Outcome.TRANSIENT, f"cannot connect to {s.target()}: {exc!r}") from None
        try:
            self._secure_and_login(conn, deadline)
        except BaseException:
            conn.close()
            raise
        return conn

    def _secure_and_login(self, conn: smtplib.SMTP, deadline: float) -> None:
        s = self.settings
        try:
            _arm(conn, deadline, "EHLO")
            conn.ehlo_or_helo_if_needed()
            if not s.implicit_tls and s.starttls != "off":
                if conn.has_extn("starttls"):
                    _arm(conn, deadline, "STARTTLS")
                    conn.starttls(context=self._tls)
                    _arm(conn, deadline, "EHLO")
                    conn.ehlo_or_helo_if_needed()
                elif s.starttls == "require":
                    raise _Stop(Outcome.TRANSIENT, "server does not offer STARTTLS (required)", Blame.SENDER)
            if s.username is None:
                return
            encrypted = s.implicit_tls or isinstance(conn.sock, ssl.SSLSocket)
            if not encrypted and s.starttls != "off":
                raise _Stop(
                    Outcome.TRANSIENT,
                    "refusing to send credentials unencrypted: the server offers no"
                    " STARTTLS (set starttls=off to allow it on a trusted network)",
                    Blame.SENDER,
                )
            _arm(conn, deadline, "AUTH")
            if s.oauth_token is not None:
                _xoauth2_login(conn, s.username, s.oauth_token)
            else:
                _login(conn, s.username, s.password or "")
        except smtplib.SMTPResponseException as exc:  # HELO, STARTTLS and AUTH errors
            _refuse("session setup", exc.smtp_code, exc.smtp_error)
        except (OSError, smtplib.SMTPException) as exc:
            raise _Stop(Outcome.TRANSIENT, f"session setup failed: {exc!r}") from None

    def _transact(
        self,
        conn: smtplib.SMTP,
        email: OutgoingEmail,
        payload: bytes,
        before_commit: BeforeCommitHook | None,
        deadline: float,
    ) -> Delivery:
        sender = normalize_address(email.return_path or email.from_address)
        recipient = normalize_address(email.to_address)
        options = []
        if not (sender + recipient).isascii():
            if not conn.has_extn("smtputf8"):
                raise _Stop(Outcome.PERMANENT, "address needs SMTPUTF8; the server lacks it")
            options.append("SMTPUTF8")
        if not payload.isascii() and conn.has_extn("8bitmime"):
            options.append("BODY=8BITMIME")
        self._command(conn, "MAIL FROM", lambda: conn.mail(sender, options), deadline)
        self._command(conn, "RCPT TO", lambda: conn.rcpt(recipient), deadline)
        if before_commit is not None:
            try:
                before_commit()
            except Exception as exc:
                raise _Stop(Outcome.TRANSIENT, f"aborted before DATA: {exc!r}") from None
        self._command(conn, "DATA", lambda: _data_command(conn), deadline, expect=354)
        return self._content(conn, payload, deadline)

    def _command(
        self,
        conn: smtplib.SMTP,
        stage: str,
        call: Callable[[], tuple[int, bytes]],
        deadline: float,
        expect: int | None = None,
    ) -> None:
        _arm(conn, deadline, stage)
        try:
            code, reply = call()
        except (OSError, smtplib.SMTPException) as exc:
            raise _Stop(Outcome.TRANSIENT, f"connection lost at {stage}: {exc!r}") from None
        if code == expect or (expect is None and 200 <= code < 300):
            return
        _refuse(stage, code, reply)

    def _content(self, conn: smtplib.SMTP, payload: bytes, deadline: float) -> Delivery:
        sock = conn.sock
        if sock is None:
            raise _Stop(Outcome.TRANSIENT, "connection closed before the message content")
        _arm(conn, deadline, "the message content")
        try:
            sock.sendall(payload)
        except OSError as exc:
            # sendall raised, so the last byte of CRLF.CRLF never left: nothing was accepted.
            # Close without QUIT: a QUIT now would only be read as more message content.
            conn.close()
            raise _Stop(Outcome.TRANSIENT, f"connection lost sending content: {exc!r}") from None
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            code, reply = conn.getreply()
        except (OSError, smtplib.SMTPException) as exc:
            return Delivery(Outcome.UNKNOWN, f"no reply after the final dot: {exc!r}")
        text = reply.decode("utf-8", "replace")
        if 200 <= code < 300:
            return Delivery(Outcome.ACCEPTED, f"{code} {text}", ref=text)
        if 400 <= code < 600:
            outcome, blame = _verdict(Stage.END, code, text)
            return Delivery(outcome, f"message refused: {code} {text}", blame=blame)
        return Delivery(Outcome.UNKNOWN, f"unintelligible reply after the final dot: {code} {text}")

    def _hang_up(self, conn: smtplib.SMTP, *, polite: bool) -> None:
        """QUIT, best effort and briefly: the outcome is already decided."""
        try:
            if polite and conn.sock is not None:
                conn.sock.settimeout(self.quit_timeout)
                conn.quit()
        except (OSError, smtplib.SMTPException):
            pass
        finally:
            conn.close()

    def _scrub(self, text: str) -> str:
        """Remove the password (and its AUTH encodings) from text a server may have echoed."""
        password, user = self.settings.password, self.settings.username or ""
        if not password:
            return text
        forms = {
            password,
            quote(password, safe=""),
            base64.b64encode(password.encode()).decode(),
            base64.b64encode(f"\0{user}\0{password}".encode()).decode(),
        }
        for form in sorted(forms, key=len, reverse=True):
            text = text.replace(form, "***")
        return text


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also under TLS: SSLSocket.shutdown would first drop its
    # TLS object while the sending thread may be inside it.
    with contextlib.suppress(OSError):  # already closed: the send is over anyway
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _arm(conn: smtplib.SMTP, deadline: float, stage: str) -> None:
    """Give the next network wait what is left of the send's budget; none left: stop."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _Stop(Outcome.TRANSIENT, f"out of time before {stage}")
    if conn.sock is not None:
        conn.sock.settimeout(remaining)


def _login(conn: smtplib.SMTP, username: str, password: str) -> None:
    """AUTH with smtplib's choice of mechanism, or PLAIN in UTF-8 (RFC 4954) when needed.

    smtplib encodes credentials as ASCII, so a password like "wörd" needs PLAIN by hand.
    """
    if (username + password).isascii():
        conn.login(username, password)
        return
    if not conn.has_extn("auth") or "PLAIN" not in conn.esmtp_features["auth"].upper().split():
        raise _Stop(Outcome.TRANSIENT, "non-ASCII credentials need AUTH PLAIN; server lacks it", Blame.SENDER)
    token = base64.b64encode(f"\0{username}\0{password}".encode()).decode("ascii")
    code, reply = conn.docmd("AUTH", f"PLAIN {token}")
    if code != 235:
        raise smtplib.SMTPAuthenticationError(code, reply)


def _xoauth2_login(conn: smtplib.SMTP, username: str, token_source: TokenSource) -> None:
    """AUTH XOAUTH2 with a fresh access token; refused, once more with a renewed one (the
    provider is asked: a revoked grant shows there). A grant the provider refused is the
    sender's own problem (the mailbox pauses); a token endpoint that does not answer is worth
    a retry."""
    for renew in (False, True):
        try:
            initial = xoauth2(username, token_source(renew=renew))
        except GrantRevoked as exc:
            raise _Stop(
                Outcome.TRANSIENT, f"the mailbox's OAuth2 grant was refused: {exc}", Blame.SENDER
            ) from None
        except GrantUnusable as exc:
            raise _Stop(Outcome.TRANSIENT, str(exc), Blame.SENDER) from None
        except TokenUnavailable as exc:
            raise _Stop(Outcome.TRANSIENT, f"no OAuth2 access token now: {exc}") from None
        try:
            # A refusal comes as a 334 challenge (Google's JSON error) that the client answers
            # with an empty line; the 535 that follows raises SMTPAuthenticationError.
            conn.auth(
                "XOAUTH2",
                lambda challenge=None, first=initial: first if challenge is None else "",
                initial_response_ok=True,
            )
            return
        except smtplib.SMTPAuthenticationError:
            if renew:
                raise


def _data_command(conn: smtplib.SMTP) -> tuple[int, bytes]:
    conn.putcmd("data")
    return conn.getreply()


def _client_tls_context(settings: SmtpSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=settings.cafile)
    if not settings.verify:
        # Only for a lab server with a self-signed certificate: the URL says verify=false.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
