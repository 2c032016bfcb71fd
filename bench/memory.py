"""Peak resident memory (RSS) of a `replyguard worker --once` sending N due steps (null
transport, PostgreSQL), and of `replyguard ingest` reading a generated mbox of N messages
(SQLite), each at two sizes so growth with N shows.

    python bench/memory.py [--steps 1000,10000] [--messages 2000,20000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import START, scratch_db, workspace, write_result
from bench.messages import mix
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

CLI = "from replyguard.entrypoints.cli.app import main; main()"
# Runs the command as a child and prints the child's peak RSS in KiB (Linux ru_maxrss).
PEAK = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True);"
    "sys.stderr.write(r.stderr.decode()[-2000:] if r.returncode else '');"
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def peak_rss_mib(args: list[str], env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, sys.executable, "-c", CLI, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    code, kib = done.stdout.split()
    if code != "0":
        raise RuntimeError(f"{args} failed: {done.stderr}")
    return round(int(kib) / 1024, 1)


def worker_rss(steps: int) -> dict[str, object]:
    with scratch_db("postgresql", "mem") as url:
        app = workspace(url, steps)
        app.close()
        mib = peak_rss_mib(
            ["--db", url, "--now", START.isoformat(), "worker", "--once"], {"REPLYGUARD_TRANSPORT": "null:"}
        )
        check = app.engine
        with check.connect() as conn:
            sent = conn.execute(text("SELECT count(*) FROM steps WHERE state = 'sent'")).scalar_one()
        check.dispose()
    return {"what": "worker --once", "n": steps, "done": sent, "peak_rss_mib": mib}


def ingest_rss(messages: int) -> dict[str, object]:
    with scratch_db("sqlite", "mem") as url, tempfile.TemporaryDirectory() as tmp:
        app = workspace(url, 2000)
        with app.engine.connect() as conn:
            targets = [
                (r.to_address, r.message_id)
                for r in conn.execute(text("SELECT to_address, message_id FROM steps WHERE position = 1"))
            ]
        app.close()
        mbox = Path(tmp) / "inbound.mbox"
        with mbox.open("wb") as out:
            for raw in mix(targets, messages):
                body = raw.replace(b"\r\n", b"\n").replace(b"\nFrom ", b"\n>From ")
                out.write(b"From MAILER-DAEMON Mon Dec  7 10:00:00 2026\n" + body + b"\n")
        size = mbox.stat().st_size
        mib = peak_rss_mib(["--db", url, "--now", START.isoformat(), "ingest", str(mbox)], {})
    return {"what": "ingest (mbox)", "n": messages, "mbox_mib": round(size / 2**20, 1), "peak_rss_mib": mib}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", default="1000,10000")
    parser.add_argument("--messages", default="2000,20000")
    args = parser.parse_args()
    console = Console()
    rows = [worker_rss(int(n)) for n in args.steps.split(",")]
    rows += [ingest_rss(int(n)) for n in args.messages.split(",")]
    table = Table(title="peak RSS (MiB)")
    for col in ("process", "N", "peak RSS MiB", "note"):
        table.add_column(col)
    for row in rows:
        note = f"mbox {row['mbox_mib']} MiB" if "mbox_mib" in row else f"{row['done']} sent"
        table.add_row(str(row["what"]), f"{row['n']:,}", f"{row['peak_rss_mib']}", note)
    console.print(table)
    console.print(f"written {write_result('memory', {'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
