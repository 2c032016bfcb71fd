"""The cost of one hostile message: classification CPU, and ingest end to end (CPU and memory).

Usage: .venv/bin/python bench/classify_cost.py [--db URL] [--out PATH]

For each message of bench/hostile.py: the CPU time of `classify` (best of 3, no tracing), then
`ingest_raw` (store, parse, classify, match, record) on a fresh SQLite database (or --db): its
CPU time, and its peak of traced Python memory (tracemalloc, a second run). Bounds (issue 11,
issue 7 item 12): classify under 100 ms for messages up to 25 MB; ingest under 1 s of CPU and
200 MB for messages up to 30 MB. Writes JSON to bench/out/classify_cost.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import REPO
from hostile import HOSTILE

from replyguard.domain.inbound import classify


def _cpu(fn: object, *args: object) -> float:
    started = time.process_time()
    fn(*args)  # type: ignore[operator]
    return time.process_time() - started


def _ingest(db_url: str) -> object:
    from replyguard.bootstrap import bootstrap
    from replyguard.service_layer.inbound.ingest import ingest_raw

    app = bootstrap(db_url=db_url, now="2024-07-15T12:00:00+00:00")
    app.init_database()
    counter = iter(range(10**6))

    def run(raw: bytes) -> None:
        # A distinct Message-ID per run: the same bytes twice would be a duplicate (no work).
        ingest_raw(app, raw.replace(b"<hostile@", f"<hostile{next(counter)}@".encode(), 1), "bench")

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", default="")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "classify_cost.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.db or f"sqlite:///{tmp}/cost.db"
        ingest = _ingest(db_url)
        rows = {}
        for name, build in HOSTILE.items():
            raw = build()
            classify_ms = min(_cpu(classify, raw) for _ in range(3)) * 1000
            ingest_ms = _cpu(ingest, raw) * 1000
            tracemalloc.start()
            ingest(raw)  # type: ignore[operator]
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            rows[name] = {"mb": round(len(raw) / 1e6, 1), "classify_cpu_ms": round(classify_ms, 1),
                          "ingest_cpu_ms": round(ingest_ms, 1), "ingest_peak_mb": round(peak, 1)}  # fmt: skip
            print(f"{name:24} {rows[name]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"Report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
