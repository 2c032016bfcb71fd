"""How the long-running commands (`worker`, `up`) stop on SIGINT or SIGTERM.

The first signal asks for a stop: the worker hands nothing more over and gives back what it
claimed; the email in flight has `GRACE` seconds to finish, then its connection is cut
(`Worker.interrupt`); whatever still runs at `LIMIT` seconds is left behind and the process
exits (a step left sending is held as an unknown outcome when its lease ends, as after a
crash). A second signal exits at once.

Exit codes (README, "Errors and exit codes"): 130 after Ctrl-C (SIGINT), as for any
interrupted command; 0 after SIGTERM, which is how a service manager (systemd, Docker,
Kubernetes) asks a service to stop: a stop it asked for and got is a success to it.

Why a thread: a Python signal handler runs in the main thread between two bytecodes, maybe
while that thread holds the very lock an `Event.set()` takes (it may be inside `Event.wait`),
which would deadlock. So the handler does nothing; the C-level handler writes the signal's
number to a socket (`signal.set_wakeup_fd`), and a watcher thread reads it and acts.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable
from types import TracebackType

from replyguard.entrypoints.cli.errors import EXIT_INTERRUPTED

#: Seconds the email in flight has to finish once a stop is asked; then it is cut.
GRACE = 5.0
#: Seconds after the stop by which the process has exited, whatever still runs.
LIMIT = 9.0

_HANDLED = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """While entered: SIGINT and SIGTERM set `event` (once), then `then()` runs in the watcher
    thread (for the grace and the cut); a second signal exits the process at once (130).
    On exit, the signal handlers and the wakeup fd are put back as they were."""

    def __init__(self, event: threading.Event, then: Callable[[], None] | None = None) -> None:
        self.event = event
        self.then = then
        self.received: int | None = None  # the first signal's number
        self._reader, self._writer = socket.socketpair()
        self._saved: dict[int, object] = {}
        self._saved_fd = -1
        self._thread = threading.Thread(target=self._watch, name="stop-signals", daemon=True)

    @property
    def name(self) -> str:
        """The first signal's name ("SIGTERM"), or "" if none came."""
        return signal.Signals(self.received).name if self.received is not None else ""

    @property
    def exit_code(self) -> int:
        """What the command exits with after a clean stop: 130 for SIGINT, 0 otherwise."""
        return EXIT_INTERRUPTED if self.received == signal.SIGINT else 0

    def __enter__(self) -> StopSignals:
        self._writer.setblocking(False)
        self._saved = {sig: signal.getsignal(sig) for sig in _HANDLED}
        for sig in _HANDLED:
            signal.signal(sig, _ignore)
        self._saved_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        signal.set_wakeup_fd(self._saved_fd)
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._writer.close()  # the watcher reads end-of-file and ends
        self._thread.join(timeout=LIMIT)
        self._reader.close()

    def _watch(self) -> None:
        while data := self._reader.recv(64):
            for number in data:
                if number not in _HANDLED:
                    continue  # another signal with a Python handler: not ours
                if self.received is not None:
                    os._exit(EXIT_INTERRUPTED)  # a second signal: the person wants out now
                self.received = number
                self.event.set()
                if self.then is not None:
                    self.then()


def _ignore(_signum: int, _frame: object) -> None:
    """The Python-level handler: the watcher thread does the work (see the module doc)."""


def wind_down(done: threading.Event, interrupt: Callable[[], None], *, grace: float = GRACE) -> None:
    """After a stop was asked: let the work in flight finish for up to `grace` seconds, then
    `interrupt()` it (cut the email in flight)."""
    if not done.wait(grace):
        interrupt()
