"""Classification accuracy on the shared evaluation corpus, read in place.

Usage: .venv/bin/python bench/eval_classifier.py [--corpus PATH] [--out PATH] [--show-errors]

Reads `<corpus>/labels.tsv` and `<corpus>/emails/*.eml` (never copied into this repository),
classifies each file and prints per-kind accuracy, the confusion matrix, return-date accuracy
per language, every human reply taken for an automatic message (must be none), and new-text
accuracy on REPLY_TEXT.tsv. Writes a JSON report to bench/out/eval_classifier.json (ignored;
the committed reference results in bench/results/ are updated deliberately with --out).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import REPO, Item, norm_text, print_report, read_tsv, score

_LANG = re.compile(r"^syn_[a-z]+_(?:[a-z]+_)?([a-z]{2})(?:_|\.)")


def language_of(name: str) -> str:
    """The language named in a synthetic file's name (syn_ooo_exchange_de...), else 'en'."""
    match = _LANG.match(name)
    return match.group(1) if match else ("en" if not name.startswith("syn_") else "unknown")


def evaluate(corpus: Path) -> dict[str, object]:
    items = []
    for row in read_tsv(corpus / "labels.tsv"):
        accepted = () if row["return_dates"] in {"", "-"} else tuple(row["return_dates"].split(","))
        raw = (corpus / "emails" / row["file"]).read_bytes()
        items.append(Item(row["file"], row["kind"], accepted, raw, language_of(row["file"])))
    report = score(items)
    results = report.pop("results")
    assert isinstance(results, list)
    by_file = {str(r["file"]): r for r in results}
    texts = []
    for row in read_tsv(corpus / "REPLY_TEXT.tsv"):
        expected = row["expected_new_text"].replace("\\n", "\n")
        got_text = str(by_file.get(row["file"], {}).get("reply_text", ""))
        texts.append({"file": row["file"], "expected": expected, "got": got_text,
                      "ok": norm_text(expected) == norm_text(got_text)})  # fmt: skip
    report["reply_text"] = {
        "total": len(texts),
        "correct": sum(t["ok"] for t in texts),
        "failures": [t for t in texts if not t["ok"]],
    }
    return {"corpus": str(corpus), **report}


def _print(report: dict[str, object], console: Console, show_errors: bool) -> None:
    print_report(report, console, show_errors)
    texts = report["reply_text"]
    assert isinstance(texts, dict)
    console.print(f"Reply text exact (whitespace-normalised): {texts['correct']}/{texts['total']}")
    if show_errors:
        for t in texts["failures"]:
            console.print(f"[magenta]text {t['file']}[/] expected {t['expected']!r} got {t['got']!r}")
    console.print(f"{report['messages']} messages in {report['seconds']:.2f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "eval_classifier.json")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)
    console = Console()
    if not (args.corpus / "labels.tsv").is_file():
        console.print(f"No corpus at {args.corpus} (labels.tsv missing): nothing to evaluate.")
        return 0
    report = evaluate(args.corpus)
    _print(report, console, args.show_errors)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    console.print(f"Report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
