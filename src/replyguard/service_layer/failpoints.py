"""Named failpoints on the send path, for fault tests.

Production code calls `failpoints.hit("after_marker")` at each named point; nothing happens
unless a test or the fault harness armed that point. Armed from the environment with
`REPLYGUARD_FAILPOINTS="after_marker=kill@0.05,before_claim_commit=crash@0.1"` and
`REPLYGUARD_FAILPOINT_SEED`: `kill` is SIGKILL of this process, `crash` raises
InjectedCrash, `stop` is SIGSTOP (the harness sends SIGCONT), `sleep:S` sleeps S seconds.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable

NAMES = (
    "before_claim_commit",
    "after_claim",
    "after_recheck",
    "after_marker",
    "before_data",
    "after_transport",
    "before_record_commit",
    "inside_reply_tx",
    "after_reply_handover",  # the reply's thread and notice are written; nothing is committed
    "after_notice_sent",  # a notice reached its channel; its delivery is not recorded yet
)


class InjectedCrash(RuntimeError):
    """Raised by an armed failpoint: simulates a crash at that point."""


Action = Callable[[str], None]


class Failpoints:
    def __init__(self) -> None:
        self._armed: dict[str, tuple[Action, float]] = {}
        self._random = random.Random(0)  # noqa: S311 - fault injection, not security

    def arm(self, name: str, action: Action, probability: float = 1.0) -> None:
        if name not in NAMES:
            raise ValueError(f"unknown failpoint {name!r}; known: {', '.join(NAMES)}")
        self._armed[name] = (action, probability)

    def disarm(self, name: str | None = None) -> None:
        if name is None:
            self._armed.clear()
        else:
            self._armed.pop(name, None)

    def hit(self, name: str) -> None:
        armed = self._armed.get(name)
        if armed is None:
            return
        action, probability = armed
        if probability >= 1.0 or self._random.random() < probability:
            action(name)

    @classmethod
    def from_env(cls) -> Failpoints:
        points = cls()
        spec = os.environ.get("REPLYGUARD_FAILPOINTS", "").strip()
        points._random.seed(int(os.environ.get("REPLYGUARD_FAILPOINT_SEED", "0")))
        for item in filter(None, (p.strip() for p in spec.split(","))):
            name, _, rest = item.partition("=")
            what, _, prob = rest.partition("@")
            points.arm(name.strip(), _action(what.strip()), float(prob or 1.0))
        return points


def crash(name: str) -> None:
    raise InjectedCrash(name)


def _action(what: str) -> Action:
    if what == "kill":
        return lambda _name: os.kill(os.getpid(), signal.SIGKILL)
    if what == "stop":
        return lambda _name: os.kill(os.getpid(), signal.SIGSTOP)
    if what == "crash":
        return crash
    if what.startswith("sleep:"):
        seconds = float(what.split(":", 1)[1])
        return lambda _name: time.sleep(seconds)
    raise ValueError(f"unknown failpoint action {what!r} (kill, stop, crash, sleep:SECONDS)")
