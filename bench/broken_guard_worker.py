"""TEST-ONLY: `replyguard worker` with its send guard broken, for proving the fault campaign's
checker can fail (tests/integration/test_torture_short.py, `bench/torture.py --broken-guard`).

The product has no switch that turns its guard off: this file lives outside the package, and
only a process started as `python bench/broken_guard_worker.py ARGS...` runs it. It replaces
the worker class with one whose send guard takes no lead lock and re-checks nothing before a
send, then runs the ordinary command line with the given arguments.
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the project imports

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import Connection

from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.send_policy import SendLimits
from replyguard.entrypoints.cli.app import main
from replyguard.service_layer.sending import worker as worker_module
from replyguard.service_layer.sending.send_guard import SendGuard
from replyguard.service_layer.sending.worker_base import _SEND_ROWS, Claim, S


class BrokenSendGuard(SendGuard):
    """Sends every claimed step: no lead lock, no reply state, no cancel request read."""

    def _recheck_many(
        self, conn: Connection, claims: list[Claim], results: dict[int, Any]
    ) -> list[tuple[Claim, OutgoingEmail, SendLimits]]:
        ids = [claim.step_id for claim in claims]
        rows = {row.id: row for row in conn.execute(_SEND_ROWS.where(S.c.id.in_(ids)))}
        return [
            (claim, self.ctx.email_from_row(rows[claim.step_id]), self.ctx.limits(rows[claim.step_id]))
            for claim in claims
        ]


class BrokenGuardWorker(worker_module.Worker):
    """The real worker with its send guard swapped for the broken one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = BrokenSendGuard(self.ctx, self.guard.recorder)


def break_the_guard() -> None:
    """Every Worker this process builds from now on is the broken one."""
    worker_module.Worker = BrokenGuardWorker  # type: ignore[misc]


if __name__ == "__main__":
    break_the_guard()
    main()
