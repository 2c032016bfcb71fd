"""Classification speed per kind, warm, single process: held-out set and shared corpus.

Usage: .venv/bin/python bench/classify_speed.py [--seconds S] [--out PATH]

Each message is classified once to warm caches (dateparser's locale data, regexes), then each
kind's messages are classified in a loop for about `--seconds` seconds; the rate is messages per
second of wall time on one core. PRODUCT.md's target for classification alone: over 1,000/s.
Writes JSON to bench/results/classify_speed.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import KINDS, REPO, Item, read_tsv
from eval_heldout import heldout_items

from replyguard.domain.inbound import classify


def corpus_items(corpus: Path) -> list[Item]:
    if not (corpus / "labels.tsv").is_file():
        return []
    return [
        Item(row["file"], row["kind"], (), (corpus / "emails" / row["file"]).read_bytes())
        for row in read_tsv(corpus / "labels.tsv")
    ]


def rates(items: list[Item], seconds: float) -> dict[str, dict[str, float]]:
    by_kind: dict[str, list[bytes]] = defaultdict(list)
    for item in items:
        by_kind[item.kind].append(item.raw)
        classify(item.raw)  # warm-up
    out: dict[str, dict[str, float]] = {}
    for kind in [*KINDS, "other"]:
        raws = by_kind.get(kind)
        if not raws:
            continue
        done, started = 0, time.perf_counter()
        while True:
            for raw in raws:
                classify(raw)
            done += len(raws)
            elapsed = time.perf_counter() - started
            if elapsed >= seconds:
                break
        out[kind] = {"messages": len(raws), "per_second": round(done / elapsed, 1)}
    all_raws = [i.raw for i in items]
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for raw in all_raws:
            classify(raw)
        done += len(all_raws)
    out["all"] = {"messages": len(all_raws), "per_second": round(done / (time.perf_counter() - started), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "classify_speed.json")
    args = parser.parse_args(argv)
    report: dict[str, object] = {"python": platform.python_version(), "seconds_per_kind": args.seconds}
    for name, items in (("heldout", heldout_items()), ("corpus", corpus_items(args.corpus))):
        if not items:
            continue
        result = rates(items, args.seconds)
        report[name] = result
        print(f"{name}:")
        for kind, row in result.items():
            print(f"  {kind:<14} {row['per_second']:>9.1f} msgs/s  ({int(row['messages'])} messages)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"Report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
