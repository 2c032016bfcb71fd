"""What the step-count ledger (migration 0030) costs the send path, on PostgreSQL: the same
guarded worker with the ledger's triggers enabled and disabled, alternating, in one run.

    python bench/tally_cost.py [--steps 1500] [--rounds 5] [--moves 4000]

Two measures. (1) The server's time for one state move of one step, with and without the
row trigger, timed inside the server (a DO block of up to --moves single-row UPDATEs, each of
another step, `clock_timestamp()` around it, rolled back): what each of a send's three
moves (scheduled -> claimed -> sending -> sent) pays.
(2) Guarded sends per second with the null transport at batch 1 (`bench/send_throughput.py`'s
worker), triggers on and off in alternating rounds (the order flips each round), medians: the
slowdown the issue allows is 5%. The triggers are switched with ALTER TABLE … DISABLE TRIGGER
in the scratch database only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import scratch_db, workspace, write_result
from bench.send_throughput import RESET, guarded, timed
from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, create_engine, text

TRIGGERS = ("steps_tally_insert", "steps_tally_update", "steps_tally_delete")

MOVES = """
DO $$
DECLARE t0 timestamptz := clock_timestamp(); r record;
BEGIN
  FOR r IN SELECT id FROM steps ORDER BY id LIMIT {moves} LOOP
    UPDATE steps SET state = CASE WHEN state = 'scheduled' THEN 'claimed' ELSE 'scheduled' END
    WHERE id = r.id;
  END LOOP;
  RAISE NOTICE 'elapsed %', extract(epoch FROM clock_timestamp() - t0);
END $$
"""


def switch(admin: Engine, on: bool) -> None:
    with admin.begin() as conn:
        for name in TRIGGERS:
            conn.execute(text(f"ALTER TABLE steps {'ENABLE' if on else 'DISABLE'} TRIGGER {name}"))


def move_cost_us(admin: Engine, moves: int) -> float:
    """Server time of one single-row state move, in µs (rolled back: no row is left moved)."""
    with admin.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        notices: list[str] = []
        raw.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        done = min(moves, conn.execute(text("SELECT count(*) FROM steps")).scalar_one())
        conn.execute(text(MOVES.format(moves=done)))
        conn.rollback()
    elapsed = float(notices[-1].split()[-1])
    return elapsed / done * 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--moves", type=int, default=4000)
    args = parser.parse_args()
    console = Console()
    rates: dict[bool, list[float]] = {True: [], False: []}
    moves: dict[bool, list[float]] = {True: [], False: []}
    with scratch_db("postgresql", "tally") as url:
        app = workspace(url, args.steps)
        app.close()
        admin = create_engine(url)
        for r in range(args.rounds):
            for on in (True, False) if r % 2 == 0 else (False, True):
                switch(admin, on)
                moves[on].append(move_cost_us(admin, args.moves))
                with admin.begin() as conn:
                    for sql in RESET:
                        conn.execute(text(sql))
                with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.execute(text("VACUUM ANALYZE steps"))
                wall = timed(guarded, url, 1, 1)
                with admin.connect() as conn:
                    sent = conn.execute(text("SELECT count(*) FROM steps WHERE state = 'sent'")).scalar_one()
                rates[on].append(sent / wall)
                console.print(
                    f"round {r + 1} ledger {'on ' if on else 'off'}: {sent / wall:6.1f} sends/s, "
                    f"one state move {moves[on][-1]:.1f} µs"
                )
        switch(admin, True)
        admin.dispose()
    result = {
        "steps": args.steps,
        "rounds": args.rounds,
        "sends_per_s": {"on": rates[True], "off": rates[False]},
        "move_us": {"on": moves[True], "off": moves[False]},
        "median_sends_per_s": {"on": statistics.median(rates[True]), "off": statistics.median(rates[False])},
        "median_move_us": {"on": statistics.median(moves[True]), "off": statistics.median(moves[False])},
    }
    slowdown = 1 - result["median_sends_per_s"]["on"] / result["median_sends_per_s"]["off"]
    added_us = result["median_move_us"]["on"] - result["median_move_us"]["off"]
    per_send_ms = 1000 / result["median_sends_per_s"]["off"]
    result["slowdown"] = round(slowdown, 4)
    result["three_moves_of_a_send"] = round(3 * added_us / 1000 / per_send_ms, 4)
    table = Table(title="the step-count ledger on the send path (PostgreSQL, null transport, batch 1)")
    for col in ("", "ledger off", "ledger on", "difference"):
        table.add_column(col, justify="right")
    table.add_row(
        "guarded sends/s (median)",
        f"{result['median_sends_per_s']['off']:.1f}",
        f"{result['median_sends_per_s']['on']:.1f}",
        f"{-100 * slowdown:+.1f}%",
    )
    table.add_row(
        "one state move, server µs (median)",
        f"{result['median_move_us']['off']:.1f}",
        f"{result['median_move_us']['on']:.1f}",
        f"+{added_us:.1f} µs (x3 per send: {100 * result['three_moves_of_a_send']:.1f}% of a send)",
    )
    console.print(table)
    console.print(f"written {write_result('tally_cost', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
