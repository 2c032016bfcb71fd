"""Failpoints: the tests' hooks on the named points of the send, reply and notice paths.

The product announces each point (`service_layer/hooks.py`) and listens to none; a test wires
these instead (`tests/conftest.py: build_app`), and a worker process of the fault campaign gets
them from `tests/support/fault_worker.py`. An armed point runs its action when it is passed,
with a probability: `crash` raises InjectedCrash (a BaseException, so no `except Exception` of
the paths takes it for a failed send), `kill` is SIGKILL of this process, `stop` is SIGSTOP (the
harness sends SIGCONT), `sleep:S` sleeps S seconds. Before `kill` and `stop` the process writes
`failpoint NAME: ACTION` on stderr, so a harness can tell where each worker died.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable

from replyguard.service_layer.hooks import POINTS

NAMES = POINTS

Action = Callable[[str], None]


class InjectedCrash(BaseException):
    """Raised by an armed failpoint: the process dying at that point."""


class Failpoints:
    """Hooks (service_layer/hooks.py) that do something at the points a test armed."""

    def __init__(self, seed: int = 0) -> None:
        self._armed: dict[str, tuple[Action, float]] = {}
        self._random = random.Random(seed)

    def arm(self, name: str, action: Action, probability: float = 1.0) -> None:
        if name not in NAMES:
            raise ValueError(f"unknown failpoint {name!r}; known: {', '.join(NAMES)}")
        self._armed[name] = (action, probability)

    def disarm(self, name: str | None = None) -> None:
        if name is None:
            self._armed.clear()
        else:
            self._armed.pop(name, None)

    def at(self, point: str) -> None:
        armed = self._armed.get(point)
        if armed is None:
            return
        action, probability = armed
        if probability >= 1.0 or self._random.random() < probability:
            action(point)

    @classmethod
    def parse(cls, spec: str, seed: int = 0) -> Failpoints:
        """`"after_marker=kill@0.05,before_data=sleep:1.0@1"`: point=action@probability, ..."""
        points = cls(seed)
        for item in filter(None, (p.strip() for p in spec.split(","))):
            name, _, rest = item.partition("=")
            what, _, prob = rest.partition("@")
            points.arm(name.strip(), action(what.strip()), float(prob or 1.0))
        return points


def crash(name: str) -> None:
    raise InjectedCrash(name)


def _told(name: str, what: str, sig: signal.Signals) -> None:
    os.write(2, f"failpoint {name}: {what}\n".encode())
    os.kill(os.getpid(), sig)


def action(what: str) -> Action:
    if what == "kill":
        return lambda name: _told(name, "kill", signal.SIGKILL)
    if what == "stop":
        return lambda name: _told(name, "stop", signal.SIGSTOP)
    if what == "crash":
        return crash
    if what.startswith("sleep:"):
        seconds = float(what.split(":", 1)[1])
        return lambda _name: time.sleep(seconds)
    raise ValueError(f"unknown failpoint action {what!r} (kill, stop, crash, sleep:SECONDS)")
