"""IMAP source: hand every new message of one folder to a callback, in UID order, exactly once.

Contract of `ImapPoller`:

* It reads messages with UID > the stored cursor (BODY.PEEK[] on a read-only EXAMINE, so
  the mailbox is never changed: no \\Seen flags for the people who share it) and calls
  `handle(Fetched)` for each in ascending UID order. The cursor advances only after `handle`
  returns, which for ingest means the message is committed: a crash re-reads, never skips.
* A mailbox read for the first time starts from now: the cursor is set to the newest UID and
  the history before it is left alone (1,970 old messages replayed as fresh replies once
  stopped every lead of a product). With `history=True` the first start reads everything,
  and each message up to the newest UID of that moment is handed over as history.
* A message over `max_bytes` (RFC822.SIZE, asked first) is never fetched whole: its header
  is handed over with `refused` set, and it stays in the mailbox.
* A message expunged by another client while we read it is skipped once the server confirms
  it is gone; a message the server cannot give us (and did not expunge) is an error: the
  poller reconnects and tries again, never skipping it.
* A changed UIDVALIDITY means a new mailbox (the server rebuilt its index, the mailbox
  migrated, the folder was re-created): the cursor restarts at 0 and the whole folder is read
  again. What we stored before is a duplicate (the handler must be idempotent: ingest dedupes
  by Message-ID and body); a message that was there at the change (UID up to the newest then)
  and is dated before the moment our cursor last advanced is old mail read again — history
  the first start left alone, say — and is handed over `replayed`: it only informs. The rest
  is live: a reply that arrived meanwhile must count. A message without a readable Date is
  live (missing a reply costs more than a stop).
* A folder renamed on the server keeps its UIDs and UIDVALIDITY (RFC 3501 RENAME): a first
  start that finds another folder of the same account already read under this UIDVALIDITY
  reads on from that folder's cursor, with the same rule for what lies between.
* It waits with IDLE when the server offers it and wakes on EXISTS; otherwise it polls every
  `poll_interval` seconds. Before each IDLE it searches again until nothing is new: an EXISTS
  the server sent during our own FETCH is consumed there and would never wake the IDLE (a
  60 s stall, seen in 1 of 5 bursts of 500). IDLE is ended and the folder read again every
  `idle_refresh` seconds: RFC 2177 asks for under 29 minutes, and a minute bounds the one
  remaining window, a message landing between that last search and the IDLE command, which
  Dovecot (seen in our tests) does not report until its own periodic check.
* Any socket, TLS, IMAP or handler error closes the connection and retries with exponential
  backoff, jittered (each pause between half the backoff and all of it), from the stored
  cursor. Only `stop` ends `run`.
* It reads only while it holds the lease; if a renewal fails it drops the connection and
  waits to get the lease back.

Passwords appear in no log line, repr or source key.
"""

from __future__ import annotations

import ipaddress
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import BytesHeaderParser
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from replyguard.adapters.oauth import TokenSource

log = logging.getLogger(__name__)

Tls = Literal["ssl", "starttls", "none"]
FETCH_BATCH = 25
DEFAULT_MAX_BYTES = 50 * 1024 * 1024


class ImapUrlError(ValueError):
    pass


class LeaseBusy(RuntimeError):
    """Another poller holds this source."""


class _LeaseLost(RuntimeError):
    pass


class ImapFetchError(RuntimeError):
    """The server would not give us a message that it still holds."""


@dataclass(frozen=True, slots=True)
class Cursor:
    uidvalidity: int | None
    last_uid: int
    history_until_uid: int | None = None  # a history import: UIDs up to this one are history
    #: Read again under a new UIDVALIDITY: UIDs up to `history_until_uid` dated before this
    #: moment are old mail that only informs.
    replay_before: datetime | None = None
    #: When the cursor last advanced (or began): the moment a new UIDVALIDITY replays up to.
    advanced_at: datetime | None = None


class CursorStore(Protocol):
    def load(self) -> Cursor: ...
    def save(self, uidvalidity: int, last_uid: int) -> None: ...
    def begin(
        self,
        uidvalidity: int,
        last_uid: int,
        history_until_uid: int | None,
        replay_before: datetime | None = None,
    ) -> None: ...
    def renamed_from(self, uidvalidity: int) -> Cursor | None:
        """The cursor of another folder of the same account under this UIDVALIDITY: the folder
        before a rename (servers keep UIDs and UIDVALIDITY across RENAME), else None."""
        ...


@dataclass(frozen=True, slots=True)
class Fetched:
    """One message read from the folder, for the handler."""

    uid: int
    raw: bytes  # the whole message, or only its header when `refused` is set
    size: int
    history: bool = False  # read by a history import, not arrived since we started
    refused: str | None = None  # why only the header was read (over the size limit)
    replayed: bool = False  # old mail read again under a new UIDVALIDITY: it only informs


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
    #: An OAuth2 mailbox's access token, asked for at each login (XOAUTH2 instead of the
    #: password); raises `adapters.oauth.TokenUnavailable` or its GrantRevoked.
    token: TokenSource | None = field(default=None, repr=False, compare=False)

    def login(self, client: IMAPClient) -> None:
        """Log `client` in as this source: XOAUTH2 with a fresh token (refused, once more with
        a renewed one: a revoked grant shows at the provider), or the password."""
        if self.token is None:
            client.login(self.user, self.password)
            return
        try:
            client.oauth2_login(self.user, self.token())
        except LoginError:
            client.oauth2_login(self.user, self.token(renew=True))

    @property
    def key(self) -> str:
        """The cursor's name: the URL without the password, with the folder."""
        scheme = "imaps" if self.tls == "ssl" else "imap"
        return f"{scheme}://{quote(self.user, safe='')}@{self.host}:{self.port}/{self.folder}"


def parse_imap_url(url: str, folder: str | None = None, token: TokenSource | None = None) -> ImapSource:
    """`imaps://user:pass@host[:993][/FOLDER]` or `imap://user:pass@host[:143][/FOLDER][?starttls=no]`.

    `imap://` upgrades with STARTTLS unless `starttls=no`, which only a loopback host may use.
    `token`: an OAuth2 mailbox logs in with it, and its URL holds no password.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("imap", "imaps") or not parts.hostname:
        raise ImapUrlError("use imaps://user:password@host[:port]/FOLDER (or imap:// with STARTTLS)")
    if parts.username is None or (parts.password is None and token is None):
        raise ImapUrlError(f"the IMAP URL for {parts.hostname} needs user:password@")
    try:
        port = parts.port
    except ValueError:  # urllib's own words would not say which part of the URL is wrong
        raise ImapUrlError(f"the IMAP URL for {parts.hostname} has a port that is not a number") from None
    tls: Tls = "ssl"
    if parts.scheme == "imap":
        starttls = parse_qs(parts.query).get("starttls", ["yes"])[-1].lower()
        tls = "none" if starttls in ("no", "false", "0") else "starttls"
        if tls == "none" and not _loopback(parts.hostname):
            raise ImapUrlError("plain IMAP without STARTTLS is only allowed to a loopback host")
    return ImapSource(
        host=parts.hostname,
        port=port or (993 if tls == "ssl" else 143),
        user=unquote(parts.username),
        password=unquote(parts.password or ""),
        folder=folder or unquote(parts.path.lstrip("/")) or "INBOX",
        tls=tls,
        token=token,
    )


def _newest_uid(client: IMAPClient, info: dict[bytes, Any]) -> int:
    """The highest UID in the folder now (UIDNEXT - 1, or a search where UIDNEXT is missing)."""
    uidnext = info.get(b"UIDNEXT")
    if uidnext is not None:
        return int(uidnext) - 1
    return max(client.search(["ALL"]), default=0)


def _mailbox_grew(client: IMAPClient) -> bool:
    """Whether the server said a message arrived since our last look.

    A message that lands while a SEARCH runs is not in its answer: Dovecot adds it to our view
    when the command ends and says so by an untagged EXISTS beside the SEARCH result, which
    imaplib keeps aside and IDLE never repeats; the poller would then sleep until its next
    refresh with a reply unread. The EXISTS kept since the last look, and those a NOOP brings
    now, say whether to search again before idling."""
    kept = client._imap.untagged_responses.pop("EXISTS", None)
    _, updates = client.noop()
    return bool(kept) or any(len(u) > 1 and u[1] == b"EXISTS" for u in updates)


def _dated_before(raw: bytes, moment: datetime) -> bool:
    """Whether the message's Date header is before `moment`; False without a readable Date."""
    try:
        value = BytesHeaderParser().parsebytes(raw).get("date")
        written = parsedate_to_datetime(str(value)) if value else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    if written is None:
        return False
    return (written if written.tzinfo else written.replace(tzinfo=UTC)) < moment


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
    vanished: int = 0  # expunged by another client between our SEARCH and our FETCH
    lease_waits: int = 0
    #: The pause before each reconnect, in seconds (the backoff with its jitter).
    waits: list[float] = field(default_factory=list)


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
        handle: Callable[[Fetched], None],
        *,
        timing: Timing | None = None,
        use_idle: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        history: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
        health: Health | None = None,
    ) -> None:
        self.source, self._store, self._lease, self._handle = source, store, lease, handle
        self._health = health or _Unwatched()
        self.timing = timing or Timing()
        self.use_idle = use_idle
        self.history, self.max_bytes = history, max_bytes
        self._ssl_context = ssl_context
        self.stats = PollerStats()
        self._delay = self.timing.backoff_min
        self._jitter = random.Random()  # noqa: S311 - spreading reconnects, not a secret
        self._renew_at = 0.0
        self._stop: threading.Event | None = None  # set by `run`: checked between messages

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
        """Poll until `stop` is set, surviving every error; the lease is released on the way out.
        A stop set while messages are being read ends the reading after the message in hand
        (the cursor stands after it): a busy folder does not hold the stop up."""
        self._stop = stop
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
            # Jitter: fifty mailboxes on one provider that went down do not all come back at
            # the same instant (each waits between half its backoff and all of it).
            delay = self._delay * self._jitter.uniform(0.5, 1.0)
            log.warning(
                "IMAP %s: %s: %s; reconnecting in %.1fs",
                self.source.key,
                exc.__class__.__name__,
                str(exc)[:200],
                delay,
            )
            self.stats.waits.append(delay)
            stop.wait(delay)
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
            s.login(client)
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
        """Read until a search finds nothing new; the number of messages handed over."""
        self.stats.polls += 1
        info = client.select_folder(self.source.folder, readonly=True)
        uidvalidity = int(info[b"UIDVALIDITY"])
        cursor = self._start(client, info, uidvalidity)
        total = 0
        while not self._stopping():
            # "n:*" always matches the newest message, even when its UID is below n.
            last = cursor.last_uid
            uids = sorted(uid for uid in client.search(["UID", f"{last + 1}:*"]) if uid > last)
            if not uids and _mailbox_grew(client):
                continue
            if not uids:
                self._health.polled()
                return total
            for start in range(0, len(uids), FETCH_BATCH):
                if self._stopping():
                    return total
                self._read_batch(client, uidvalidity, uids[start : start + FETCH_BATCH], cursor)
            total += len(uids)
            cursor = Cursor(uidvalidity, uids[-1], cursor.history_until_uid, cursor.replay_before)
            # A NOOP makes the server bring our view up to date (Dovecot adds messages that
            # landed meanwhile only then); the search above then finds them.
            client.noop()
        return total

    def _stopping(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def _start(self, client: IMAPClient, info: dict[bytes, Any], uidvalidity: int) -> Cursor:
        """The cursor to read from: a first start begins at the newest UID (or, for a history
        import, at 0); a new UIDVALIDITY re-reads the folder."""
        cursor = self._store.load()
        if cursor.uidvalidity == uidvalidity:
            return cursor
        newest = _newest_uid(client, info)
        if cursor.uidvalidity is not None:
            self.stats.rescans += 1
            before = cursor.advanced_at
            log.warning(
                "UIDVALIDITY of %s changed: reading the folder again; mail dated before %s only informs",
                self.source.key,
                before,
            )
            self._store.begin(uidvalidity, 0, newest, before)
            return Cursor(uidvalidity, 0, newest, before)
        if self.history:
            log.info("%s: first start, importing its history (UIDs up to %s)", self.source.key, newest)
            self._store.begin(uidvalidity, 0, newest)
            return Cursor(uidvalidity, 0, newest)
        renamed = self._store.renamed_from(uidvalidity)
        if renamed is not None:
            # Read on from where the old name stopped; what lies between, dated before it last
            # advanced, is old mail that only informs — as for a new UIDVALIDITY.
            start = min(renamed.last_uid, newest)
            log.warning("%s: a renamed folder: reading on from UID %s", self.source.key, start + 1)
            self._store.begin(uidvalidity, start, newest, renamed.advanced_at)
            return Cursor(uidvalidity, start, newest, renamed.advanced_at)
        log.info(
            "%s: first start: reading mail from UID %s on; its history is left alone",
            self.source.key,
            newest + 1,
        )
        self._store.begin(uidvalidity, newest, None)
        return Cursor(uidvalidity, newest)

    def _read_batch(self, client: IMAPClient, uidvalidity: int, batch: list[int], cursor: Cursor) -> None:
        sizes: dict[int, dict[bytes, Any]] = client.fetch(batch, ["RFC822.SIZE"])
        size_of = {uid: int(item.get(b"RFC822.SIZE") or 0) for uid, item in sizes.items()}
        whole = [uid for uid in batch if uid in size_of and size_of[uid] <= self.max_bytes]
        bodies = self._bodies(client, whole, "BODY.PEEK[]", b"BODY[]")
        heads = self._bodies(
            client,
            [u for u in batch if u in size_of and u not in whole],
            "BODY.PEEK[HEADER]",
            b"BODY[HEADER]",
        )
        vanished = set(batch) - set(bodies) - set(heads)
        if vanished:
            self._check_vanished(client, vanished)
        until, before = cursor.history_until_uid, cursor.replay_before
        for uid in batch:
            if self._stopping():
                return  # the cursor stands after the last message handled
            there = until is not None and uid <= until
            raw = bodies.get(uid) or heads.get(uid)
            replayed = there and before is not None and raw is not None and _dated_before(raw, before)
            # A re-read folder's live part is not history; a history import's whole past is.
            history = there and before is None
            if uid in bodies:
                self._handle(Fetched(uid, bodies[uid], size_of[uid], history, replayed=replayed))
            elif uid in heads:
                refused = (
                    f"message of {size_of[uid]} bytes is over the limit of {self.max_bytes}; "
                    f"it stays in {self.source.folder}, UID {uid}"
                )
                self._handle(Fetched(uid, heads[uid], size_of[uid], history, refused, replayed))
            self.stats.fetched += uid not in vanished
            self._store.save(uidvalidity, uid)
            self._renew_if_due()

    def _bodies(self, client: IMAPClient, uids: list[int], item: str, key: bytes) -> dict[int, bytes]:
        """Message data by UID; a UID the server gave no data for is left out."""
        if not uids:
            return {}
        data: dict[int, dict[bytes, Any]] = client.fetch(uids, [item])
        # Dovecot answers a message expunged by another session with `BODY[] NIL`.
        return {uid: bytes(found[key]) for uid, found in data.items() if found.get(key) is not None}

    def _check_vanished(self, client: IMAPClient, uids: set[int]) -> None:
        """Skip messages only once the server confirms they are gone; else raise (retry)."""
        client.noop()  # lets the server tell us about expunges
        still_there = set(client.search(["UID", ",".join(str(u) for u in sorted(uids))])) & uids
        if still_there:
            raise ImapFetchError(f"the server gave no data for UIDs {sorted(still_there)} that still exist")
        self.stats.vanished += len(uids)
        log.info("%s: %s messages were expunged while we read them", self.source.key, len(uids))

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
