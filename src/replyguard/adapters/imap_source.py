"""IMAP source: hand every new message of one folder to a callback, in UID order, exactly once.

Contract of `ImapPoller`:

* It reads messages with UID > the stored cursor (BODY.PEEK[] on a read-only EXAMINE, so
  the mailbox is never changed: no \\Seen flags for the people who share it) and calls
  `handle(raw)` for each in ascending UID order. The cursor advances only after `handle`
  returns, which for ingest means the message is committed: a crash re-reads, never skips.
* A changed UIDVALIDITY means the folder's UIDs were reassigned: the cursor restarts at 0 and
  the whole folder is read again. The handler must be idempotent (ingest dedupes by
  Message-ID and body), so the re-read has no second effect.
* It waits with IDLE when the server offers it and wakes on EXISTS; otherwise it polls every
  `poll_interval` seconds. IDLE is ended and the folder read again every `idle_refresh`
  seconds: RFC 2177 asks for under 29 minutes, and a minute is the bound for a message that
  lands between our last read and the IDLE command, which Dovecot (seen in our tests) does not
  report until its own periodic check.
* Any socket, TLS, IMAP or handler error closes the connection and retries with exponential
  backoff from the stored cursor. Only `stop` ends `run`.
* It reads only while it holds the lease; if a renewal fails it drops the connection and
  waits to get the lease back.

Passwords appear in no log line, repr or source key.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

from imapclient import IMAPClient

log = logging.getLogger(__name__)

Tls = Literal["ssl", "starttls", "none"]
FETCH_BATCH = 25


class ImapUrlError(ValueError):
    pass


class LeaseBusy(RuntimeError):
    """Another poller holds this source."""


class _LeaseLost(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Cursor:
    uidvalidity: int | None
    last_uid: int


class CursorStore(Protocol):
    def load(self) -> Cursor: ...
    def save(self, uidvalidity: int, last_uid: int) -> None: ...


class Lease(Protocol):
    def acquire(self) -> bool: ...
    def renew(self) -> bool: ...
    def release(self) -> None: ...


class Health(Protocol):
    """Told of every completed read and every error, for people to see (never raises)."""

    def polled(self) -> None: ...
    def failed(self, message: str) -> None: ...


class _Unwatched:
    def polled(self) -> None:
        pass

    def failed(self, message: str) -> None:
        pass


@dataclass(frozen=True, slots=True)
class ImapSource:
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    folder: str
    tls: Tls

    @property
    def key(self) -> str:
        """The cursor's name: the URL without the password, with the folder."""
        scheme = "imaps" if self.tls == "ssl" else "imap"
        return f"{scheme}://{quote(self.user, safe='')}@{self.host}:{self.port}/{self.folder}"


def parse_imap_url(url: str, folder: str | None = None) -> ImapSource:
    """`imaps://user:pass@host[:993][/FOLDER]` or `imap://user:pass@host[:143][/FOLDER][?starttls=no]`.

    `imap://` upgrades with STARTTLS unless `starttls=no`, which only a loopback host may use.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("imap", "imaps") or not parts.hostname:
        raise ImapUrlError("use imaps://user:password@host[:port]/FOLDER (or imap:// with STARTTLS)")
    if parts.username is None or parts.password is None:
        raise ImapUrlError(f"the IMAP URL for {parts.hostname} needs user:password@")
    tls: Tls = "ssl"
    if parts.scheme == "imap":
        starttls = parse_qs(parts.query).get("starttls", ["yes"])[-1].lower()
        tls = "none" if starttls in ("no", "false", "0") else "starttls"
        if tls == "none" and not _loopback(parts.hostname):
            raise ImapUrlError("plain IMAP without STARTTLS is only allowed to a loopback host")
    return ImapSource(
        host=parts.hostname,
        port=parts.port or (993 if tls == "ssl" else 143),
        user=unquote(parts.username),
        password=unquote(parts.password),
        folder=folder or unquote(parts.path.lstrip("/")) or "INBOX",
        tls=tls,
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class PollerStats:
    connections: int = 0
    fetched: int = 0
    idle_commands: int = 0
    polls: int = 0
    rescans: int = 0
    errors: int = 0
    lease_waits: int = 0


@dataclass(frozen=True, slots=True)
class Timing:
    poll_interval: float = 30.0  # without IDLE
    idle_refresh: float = 60.0  # see the module docstring: not 25 minutes
    lease_renew: float = 20.0  # well inside the lease's TTL
    lease_retry: float = 5.0
    tick: float = 1.0  # how quickly `stop` is noticed
    backoff_min: float = 0.5
    backoff_max: float = 60.0
    socket_timeout: float = 30.0


class ImapPoller:
    def __init__(
        self,
        source: ImapSource,
        store: CursorStore,
        lease: Lease,
        handle: Callable[[bytes], None],
        *,
        timing: Timing | None = None,
        use_idle: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        health: Health | None = None,
    ) -> None:
        self.source, self._store, self._lease, self._handle = source, store, lease, handle
        self._health = health or _Unwatched()
        self.timing = timing or Timing()
        self.use_idle = use_idle
        self._ssl_context = ssl_context
        self.stats = PollerStats()
        self._delay = self.timing.backoff_min
        self._renew_at = 0.0

    def run_once(self) -> int:
        """Read what is there now and return how many messages were handled."""
        if not self._lease.acquire():
            raise LeaseBusy(f"another poller is reading {self.source.key}")
        try:
            with self._connect() as client:
                return self._fetch_new(client)
        finally:
            self._lease.release()

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set, surviving every error; the lease is released on the way out."""
        try:
            while not stop.is_set():
                self._attempt(stop)
        finally:
            self._lease.release()

    def _attempt(self, stop: threading.Event) -> None:
        try:
            if not self._lease.acquire():
                self.stats.lease_waits += 1
                stop.wait(self.timing.lease_retry)
                return
            self._renew_at = time.monotonic() + self.timing.lease_renew
            with self._connect() as client:
                self._serve(client, stop)
        except _LeaseLost:
            log.warning("lost the lease on %s: another poller reads it now", self.source.key)
        except Exception as exc:
            # Server restarts, network faults and database hiccups all end here: start over
            # from the stored cursor after a pause, which nothing read can have overtaken.
            self.stats.errors += 1
            self._health.failed(f"{exc.__class__.__name__}: {str(exc)[:200]}")
            log.warning(
                "IMAP %s: %s: %s; reconnecting in %.1fs",
                self.source.key,
                exc.__class__.__name__,
                str(exc)[:200],
                self._delay,
            )
            stop.wait(self._delay)
            self._delay = min(self._delay * 2, self.timing.backoff_max)

    def _connect(self) -> IMAPClient:
        s = self.source
        client = IMAPClient(
            s.host,
            port=s.port,
            ssl=s.tls == "ssl",
            ssl_context=self._ssl_context,
            timeout=self.timing.socket_timeout,
        )
        try:
            if s.tls == "starttls":
                client.starttls(self._ssl_context)
            client.login(s.user, s.password)
        except BaseException:
            client.shutdown()
            raise
        self.stats.connections += 1
        return client

    def _serve(self, client: IMAPClient, stop: threading.Event) -> None:
        idle = self.use_idle and client.has_capability("IDLE")
        while not stop.is_set():
            self._fetch_new(client)
            self._delay = self.timing.backoff_min  # a full round worked: the fault is over
            if idle:
                self._idle(client, stop)
            else:
                self._sleep(stop)

    def _fetch_new(self, client: IMAPClient) -> int:
        self.stats.polls += 1
        info = client.select_folder(self.source.folder, readonly=True)
        uidvalidity = int(info[b"UIDVALIDITY"])
        cursor = self._store.load()
        last = cursor.last_uid
        if cursor.uidvalidity != uidvalidity:
            if cursor.uidvalidity is not None:
                self.stats.rescans += 1
                log.warning("UIDVALIDITY of %s changed: reading the whole folder again", self.source.key)
            last = 0
            self._store.save(uidvalidity, 0)
        # "n:*" always matches the newest message, even when its UID is below n.
        uids = sorted(uid for uid in client.search(["UID", f"{last + 1}:*"]) if uid > last)
        for start in range(0, len(uids), FETCH_BATCH):
            batch = uids[start : start + FETCH_BATCH]
            data: dict[int, dict[bytes, Any]] = client.fetch(batch, ["BODY.PEEK[]"])
            for uid in batch:
                item = data.get(uid)
                if item is not None:  # None: expunged since SEARCH, nothing left to read
                    self._handle(bytes(item[b"BODY[]"]))
                    self.stats.fetched += 1
                self._store.save(uidvalidity, uid)
                self._renew_if_due()
        self._health.polled()
        return len(uids)

    def _idle(self, client: IMAPClient, stop: threading.Event) -> None:
        """Wait in IDLE until the folder changes, the refresh time passes or `stop` is set."""
        tick = self.timing.tick
        refresh_at = time.monotonic() + self.timing.idle_refresh
        client.idle()
        self.stats.idle_commands += 1
        try:
            while not stop.is_set() and time.monotonic() < refresh_at:
                started = time.monotonic()
                responses = client.idle_check(timeout=tick)
                # Anything but a keep-alive "* OK Still here" (EXISTS, EXPUNGE, BYE) is news.
                if any(r and r[0] != b"OK" for r in responses):
                    return
                # imapclient returns [] at once on a closed socket: let idle_done find out.
                if not responses and time.monotonic() - started < tick / 2:
                    return
                self._renew_if_due()
        finally:
            client.idle_done()

    def _sleep(self, stop: threading.Event) -> None:
        wake_at = time.monotonic() + self.timing.poll_interval
        while not stop.is_set() and time.monotonic() < wake_at:
            stop.wait(min(self.timing.tick, max(0.0, wake_at - time.monotonic())))
            self._renew_if_due()

    def _renew_if_due(self) -> None:
        if time.monotonic() < self._renew_at:
            return
        if not self._lease.renew():
            raise _LeaseLost(self.source.key)
        self._renew_at = time.monotonic() + self.timing.lease_renew
