"""The named points of the send, reply and notice paths, and the port that hears them.

Each path calls `hooks.at(point)` as it passes one of POINTS. The product's hooks do nothing
(`NoHooks`, what `bootstrap` wires); what listens is the audit, which watches production's own
code run (`audit_watch.ObservedHooks`), and the tests' wiring, which stops or kills a process
at a point (tests/support/failpoints.py, and for whole worker processes
tests/support/fault_worker.py). Nothing that injects a fault lives in the package.

A hook may raise to stand for the process dying at that point. It raises a BaseException that
is not an Exception (as KeyboardInterrupt and SystemExit are): the paths catch `Exception`
where they must go on past a failure, so such a crash is never taken for a failed send or a
failed message, and nothing in the paths has to know it exists.
"""

from __future__ import annotations

from typing import Protocol

POINTS = (
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
    "person_send_before_data",  # a person's answer: the last re-check, before its DATA
)


class Hooks(Protocol):
    def at(self, point: str) -> None:
        """Called as a path passes `point` (one of POINTS)."""
        ...


class NoHooks:
    """The product's hooks: nothing listens."""

    def at(self, point: str) -> None:
        return None
