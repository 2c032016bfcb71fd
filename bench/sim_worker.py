"""BENCH-ONLY: `replyguard` with a clock that runs SPEED times faster than the wall clock, so
that a week of sending fits in minutes (bench/sequence_week.py).

    REPLYGUARD_SIM_START=2026-12-07T00:00:00Z REPLYGUARD_SIM_T0=<time.time()> \
    REPLYGUARD_SIM_SPEED=1200 python bench/sim_worker.py --db URL worker

Simulated time is START + (time.time() - T0) * SPEED: every process started with the same
three values agrees on it, and the harness converts the SMTP oracle's wall-clock timestamps
with the same formula. The product has no such switch: this file lives outside the package.
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the project imports

from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from replyguard import bootstrap as composition
from replyguard.domain.clock import Clock, parse_instant


class ScaledClock:
    """START + (wall time since T0) x SPEED."""

    def __init__(self, start: datetime, t0: float, speed: float) -> None:
        self.start, self.t0, self.speed = start, t0, speed

    def now(self) -> datetime:
        return self.start + timedelta(seconds=(time.time() - self.t0) * self.speed)

    def to_sim(self, wall: float) -> datetime:
        return self.start + timedelta(seconds=(wall - self.t0) * self.speed)

    def to_wall(self, sim: datetime) -> float:
        return self.t0 + (sim - self.start).total_seconds() / self.speed


def clock_from_env() -> ScaledClock:
    return ScaledClock(
        parse_instant(os.environ["REPLYGUARD_SIM_START"]),
        float(os.environ["REPLYGUARD_SIM_T0"]),
        float(os.environ["REPLYGUARD_SIM_SPEED"]),
    )


if __name__ == "__main__":
    scaled = clock_from_env()

    def make_clock(now: str | None, *, running: bool = False) -> Clock:
        return scaled

    composition.make_clock = make_clock
    from replyguard.entrypoints.cli.app import main

    main()
