"""Run the real CLI's `worker --once` at many simulated instants, in one process.

Each tick goes through the same entry point as `python -m replyguard --db URL --now T worker
--once` (argument parsing, bootstrap, worker, shutdown); only the interpreter start-up, about
a second each, is shared. Usage: worker_ticks.py DB_URL START END STEP_HOURS. Exits 1 on the
first tick that fails.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from replyguard.entrypoints.cli.app import main


def run(db_url: str, start: datetime, end: datetime, step: timedelta) -> int:
    now = start
    while now <= end:
        sys.argv = ["replyguard", "--db", db_url, "--now", now.isoformat(), "worker", "--once"]
        try:
            main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                print(f"worker tick at {now.isoformat()} exited with {exc.code}", file=sys.stderr)
                return 1
        now += step
    return 0


if __name__ == "__main__":
    db, first, last, hours = sys.argv[1:5]
    sys.exit(
        run(
            db,
            datetime.fromisoformat(first.replace("Z", "+00:00")),
            datetime.fromisoformat(last.replace("Z", "+00:00")),
            timedelta(hours=float(hours)),
        )
    )
