"""Classification accuracy on the shared evaluation corpus, read in place.

Usage: .venv/bin/python bench/eval_classifier.py [--corpus PATH] [--out PATH] [--show-errors]

Reads `<corpus>/labels.tsv` and `<corpus>/emails/*.eml` (never copied into this repository),
classifies each file and prints per-kind accuracy, the confusion matrix, return-date accuracy
per language, every human reply taken for an automatic message (must be none), and new-text
accuracy on REPLY_TEXT.tsv. Writes a JSON report to bench/results/eval_classifier.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from replyguard.domain.inbound import MessageParseError, classify

REPO = Path(__file__).resolve().parent.parent
KINDS = ["human_reply", "out_of_office", "auto_reply", "bounce_hard", "bounce_soft", "unsubscribe"]
AUTOMATIC = {"out_of_office", "auto_reply", "bounce_hard", "bounce_soft"}
_LANG = re.compile(r"^syn_[a-z]+_(?:[a-z]+_)?([a-z]{2})(?:_|\.)")


def language_of(name: str) -> str:
    """The language named in a synthetic file's name (syn_ooo_exchange_de...), else 'en'."""
    match = _LANG.match(name)
    return match.group(1) if match else ("en" if not name.startswith("syn_") else "unknown")


def _norm(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines()).strip()


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def evaluate(corpus: Path) -> dict[str, object]:
    labels = _read_tsv(corpus / "labels.tsv")
    results = []
    started = time.perf_counter()
    for row in labels:
        path = corpus / "emails" / row["file"]
        try:
            got = classify(path.read_bytes())
        except MessageParseError as exc:
            results.append({"file": row["file"], "expected": row["kind"], "got": "parse_error",
                            "error": str(exc)})  # fmt: skip
            continue
        accepted = [] if row["return_dates"] in {"", "-"} else row["return_dates"].split(",")
        results.append(
            {
                "file": row["file"],
                "expected": row["kind"],
                "got": got.kind.value,
                "return_date": got.return_date.isoformat() if got.return_date else None,
                "accepted_dates": accepted,
                "evidence": list(got.evidence),
                "reply_text": got.reply_text,
            }
        )
    elapsed = time.perf_counter() - started
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        confusion[str(r["expected"])][str(r["got"])] += 1
    per_kind = {k: {"total": sum(confusion[k].values()), "correct": confusion[k][k]} for k in KINDS}
    dates: dict[str, dict[str, int]] = defaultdict(lambda: {"total": 0, "correct": 0})
    for r in results:
        if r["expected"] != "out_of_office":
            continue
        lang = language_of(str(r["file"]))
        dates[lang]["total"] += 1
        accepted = r.get("accepted_dates") or []
        ok = (r.get("return_date") in accepted) if accepted else r.get("return_date") is None
        dates[lang]["correct"] += int(bool(ok) and r["got"] == "out_of_office")
        r["date_ok"] = bool(ok)
    human_to_auto = [r for r in results if r["expected"] == "human_reply" and r["got"] in AUTOMATIC]
    by_file = {str(r["file"]): r for r in results}
    texts = []
    for row in _read_tsv(corpus / "REPLY_TEXT.tsv"):
        expected = row["expected_new_text"].replace("\\n", "\n")
        got_text = str(by_file.get(row["file"], {}).get("reply_text", ""))
        texts.append({"file": row["file"], "expected": expected, "got": got_text,
                      "ok": _norm(expected) == _norm(got_text)})  # fmt: skip
    correct = sum(1 for r in results if r["expected"] == r["got"])
    return {
        "corpus": str(corpus),
        "messages": len(results),
        "kind_accuracy": correct / max(1, len(results)),
        "per_kind": per_kind,
        "confusion": {k: dict(v) for k, v in confusion.items()},
        "return_dates": dict(dates),
        "human_taken_for_automatic": [r["file"] for r in human_to_auto],
        "reply_text": {
            "total": len(texts),
            "correct": sum(t["ok"] for t in texts),
            "failures": [t for t in texts if not t["ok"]],
        },
        "errors": [r for r in results if r["expected"] != r["got"]],
        "date_errors": [r for r in results if r.get("date_ok") is False],
        "seconds": elapsed,
    }


def _print(report: dict[str, object], console: Console, show_errors: bool) -> None:
    per_kind = report["per_kind"]
    assert isinstance(per_kind, dict)
    table = Table(title=f"Kind accuracy: {report['kind_accuracy']:.1%} of {report['messages']}")
    table.add_column("kind")
    table.add_column("correct", justify="right")
    table.add_column("accuracy", justify="right")
    for kind, row in per_kind.items():
        acc = row["correct"] / row["total"] if row["total"] else 1.0
        table.add_row(kind, f"{row['correct']}/{row['total']}", f"{acc:.1%}")
    console.print(table)
    confusion = report["confusion"]
    assert isinstance(confusion, dict)
    matrix = Table(title="Confusion (rows: expected, columns: got)")
    columns = [*KINDS, "parse_error"]
    matrix.add_column("expected \\ got")
    for kind in columns:
        matrix.add_column(kind.replace("_", " "), justify="right")
    for kind in KINDS:
        matrix.add_row(kind, *(str(confusion.get(kind, {}).get(c, 0) or "") for c in columns))
    console.print(matrix)
    dates = report["return_dates"]
    assert isinstance(dates, dict)
    dt = Table(title="Out-of-office return dates per language")
    dt.add_column("language")
    dt.add_column("correct", justify="right")
    for lang, row in sorted(dates.items()):
        dt.add_row(lang, f"{row['correct']}/{row['total']}")
    console.print(dt)
    human = report["human_taken_for_automatic"]
    style = "bold green" if not human else "bold red"
    console.print(f"[{style}]Human replies taken for automatic: {len(human)}[/] {human or ''}")  # type: ignore[arg-type]
    texts = report["reply_text"]
    assert isinstance(texts, dict)
    console.print(f"Reply text exact (whitespace-normalised): {texts['correct']}/{texts['total']}")
    if show_errors:
        for err in report["errors"]:  # type: ignore[attr-defined]
            console.print(f"[red]{err['file']}[/] expected {err['expected']} got {err['got']} "
                          f"{err.get('evidence')}", markup=True, highlight=False)  # fmt: skip
        for err in report["date_errors"]:  # type: ignore[attr-defined]
            console.print(f"[yellow]date {err['file']}[/] got {err.get('return_date')} "
                          f"accepted {err.get('accepted_dates')} {err.get('evidence')}")  # fmt: skip
        for t in texts["failures"]:
            console.print(f"[magenta]text {t['file']}[/] expected {t['expected']!r} got {t['got']!r}")
    console.print(f"{report['messages']} messages in {report['seconds']:.2f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "eval_classifier.json")
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
