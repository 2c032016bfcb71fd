"""Draw docs/benchmarks.png from bench/results/*.json. Skips (exit 0) without matplotlib,
which is not a project dependency: `pip install matplotlib` into the venv to draw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def main() -> int:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: docs/benchmarks.png not redrawn (pip install matplotlib)")
        return 0
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    reply = json.loads((RESULTS / "reply_cancel.json").read_text())
    for db in ("sqlite", "postgresql"):
        rows = [r for r in reply["rows"] if r["db"] == db]
        if not rows:
            continue
        sizes = [r["queued_steps"] for r in rows]
        left.plot(sizes, [r["reply"]["p99_ms"] for r in rows], "o-", label=f"{db} reply p99")
        left.plot(sizes, [r["bare_commit"]["p99_ms"] for r in rows], "x--", label=f"{db} bare commit p99")
    left.axhline(20, color="red", lw=0.8, label="target p99 20 ms")
    left.set_xscale("log")
    left.set_xlabel("queued steps in the table")
    left.set_ylabel("ms")
    left.set_title("reply -> queued steps cancelled, committed")
    left.legend(fontsize=7)
    send = json.loads((RESULTS / "send_throughput.json").read_text())
    workers = [r["workers"] for r in send["rows"]]
    for batch in sorted({r.get("send_batch", 1) for r in send["rows"]}):
        rows = [r for r in send["rows"] if r.get("send_batch", 1) == batch]
        right.plot(
            [r["workers"] for r in rows],
            [r["guarded_per_s"] for r in rows],
            "o-",
            label=f"guarded sends/s, batch {batch}",
        )
    bare = {r["workers"]: r["bare_per_s"] for r in send["rows"]}
    right.plot(list(bare), list(bare.values()), "x--", label="bare SKIP LOCKED loop/s")
    right.axhline(1000, color="red", lw=0.8, label="target 1,000/s")
    right.set_xlabel("worker processes (PostgreSQL, null transport)")
    right.set_ylabel("per second")
    right.set_xticks(workers)
    right.set_title("send throughput")
    right.legend(fontsize=7)
    fig.tight_layout()
    out = ROOT / "docs" / "benchmarks.png"
    fig.savefig(out, dpi=110)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
