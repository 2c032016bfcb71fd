"""Run several long-lived components in one process, each in its own thread, and stop them
together: what `replyguard up` uses to run the web app, the worker and the pollers.

A component is a function that runs until the shared `stop` event is set. One that raises
is logged and started again after a pause (doubling up to a minute): a poller whose server
is down, or a worker whose database restarted, must not take the web app with it. An
*essential* component that returns or fails while nothing asked it to stop (the web server
could not serve) stops everything, and `run` reports it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    run: Callable[[threading.Event], None]
    essential: bool = False


class Supervisor:
    def __init__(
        self, components: list[Component], *, first_pause: float = 1.0, longest_pause: float = 60.0
    ) -> None:
        self.components = components
        self.stop = threading.Event()
        self.failed: list[str] = []
        self._pauses = (first_pause, longest_pause)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for component in self.components:
            thread = threading.Thread(target=self._keep, args=(component,), name=component.name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def _keep(self, component: Component) -> None:
        pause, longest = self._pauses
        while not self.stop.is_set():
            try:
                component.run(self.stop)
            except BaseException as exc:  # SystemExit too: uvicorn exits when it cannot serve
                log.error("%s stopped with %s: %s", component.name, exc.__class__.__name__, str(exc)[:300])
            else:
                if self.stop.is_set():
                    return
                log.error("%s ended on its own", component.name)
            if component.essential and not self.stop.is_set():
                self.failed.append(component.name)
                self.stop.set()
                return
            if self.stop.wait(pause):
                return
            log.info("starting %s again", component.name)
            pause = min(pause * 2, longest)

    def join(self, timeout: float) -> list[str]:
        """Wait for every component to finish (after `stop`), `timeout` seconds in all; the
        names still running then."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self._threads if t.is_alive()]
