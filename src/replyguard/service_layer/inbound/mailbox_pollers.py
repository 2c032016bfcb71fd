"""One poller for every mailbox: each watched folder of every connected mailbox read by its own
`ImapPoller` (IDLE per folder, its own backoff, its own lease and health row), kept in step
with the database while it runs.

`MailboxPollers.run` looks at the connected mailboxes every `refresh` seconds: a folder that
appeared gets a poller on a thread of its own, one that went away (or whose password changed)
has its poller stopped (and restarted with the new password). On PostgreSQL several processes
may run it over the same mailboxes: each folder's lease (an advisory lock) lets one of them
read it at a time, and another takes over when that one dies. Health is per folder, so per
mailbox (`mailbox_cursors`: the last read, the last error and how many; the Inbound page and
/metrics show it). Passwords live only in the URLs handed to the pollers, never in a log line.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from replyguard.adapters.imap_source import LeaseBusy

log = logging.getLogger(__name__)


class Poller(Protocol):
    def run(self, stop: threading.Event) -> None: ...

    def run_once(self) -> int: ...


#: {source key (no password): what its poller is made from: an IMAP URL (with the password) or
#: an OAuth2 mailbox's folder}, as `mailbox_accounts.watched_sources` reads it. A value that
#: changes restarts the folder's poller.
Sources = Callable[[], Mapping[str, Hashable]]


@dataclass
class _Running:
    url: Hashable
    stop: threading.Event
    thread: threading.Thread


@dataclass
class MailboxPollers:
    sources: Sources
    make: Callable[[Any], Poller]
    refresh: float = 30.0
    _running: dict[str, _Running] = field(default_factory=dict)

    def run_once(self) -> dict[str, int | str]:
        """Read every watched folder once: {source key: new messages, or why it was not read}."""
        done: dict[str, int | str] = {}
        for key, url in sorted(self.sources().items()):
            try:
                done[key] = self.make(url).run_once()
            except LeaseBusy:
                done[key] = "another poller is reading it"
            except Exception as exc:  # one folder's server or password: the others go on
                done[key] = f"{exc.__class__.__name__}: {str(exc)[:200]}"
        return done

    def run(self, stop: threading.Event) -> None:
        """Until `stop`: keep one running poller per watched folder; then stop them all."""
        try:
            while not stop.is_set():
                self.sync()
                # A little jitter: several processes sharing the mailboxes do not look together.
                stop.wait(self.refresh * random.uniform(0.9, 1.1))  # noqa: S311 - not security
        finally:
            self.stop_all()

    def watching(self) -> list[str]:
        return sorted(key for key, r in self._running.items() if r.thread.is_alive())

    def sync(self) -> None:
        """Start pollers for new folders, stop those of folders no longer watched or changed."""
        try:
            wanted = self.sources()
        except Exception as exc:  # the database went away: keep what runs, look again later
            log.warning("cannot read the connected mailboxes: %s", exc.__class__.__name__)
            return
        for key in list(self._running):
            if wanted.get(key) != self._running[key].url:
                self._stop(key)
        for key, url in wanted.items():
            if key not in self._running:
                self._start(key, url)

    def stop_all(self, timeout: float = 10.0) -> None:
        for key in list(self._running):
            self._running[key].stop.set()
        for key in list(self._running):
            self._stop(key, timeout)

    def _start(self, key: str, url: Hashable) -> None:
        stop = threading.Event()
        poller = self.make(url)
        thread = threading.Thread(target=poller.run, args=(stop,), name=f"imap {key}", daemon=True)
        self._running[key] = _Running(url, stop, thread)
        thread.start()
        log.info("watching %s", key)

    def _stop(self, key: str, timeout: float = 10.0) -> None:
        running = self._running.pop(key)
        running.stop.set()
        running.thread.join(timeout)
        log.info("no longer watching %s", key)
