"""Shared scoring and printing for the classifier evaluations (shared corpus and held-out set).

`score(items)` classifies labelled messages and returns a JSON-ready report: kind accuracy per
kind, the confusion matrix, return-date accuracy per language, and every human reply taken for
an automatic message (the one error that must never happen). `print_report` renders it.
"""

from __future__ import annotations

import csv
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from replyguard.domain.inbound import MessageParseError, classify

REPO = Path(__file__).resolve().parent.parent
KINDS = ["human_reply", "out_of_office", "auto_reply", "bounce_hard", "bounce_soft", "unsubscribe"]
AUTOMATIC = {"out_of_office", "auto_reply", "bounce_hard", "bounce_soft"}


@dataclass(frozen=True)
class Item:
    """One labelled message: its name, expected kind, accepted return dates and raw bytes."""

    name: str
    kind: str
    dates: tuple[str, ...]
    raw: bytes
    lang: str = "en"
    extra: dict[str, object] = field(default_factory=dict)


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def norm_text(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines()).strip()


def score(items: Iterable[Item]) -> dict[str, object]:
    """Classify every item and build the report (see the module docstring)."""
    results: list[dict[str, object]] = []
    started = time.perf_counter()
    for item in items:
        try:
            got = classify(item.raw)
        except MessageParseError as exc:
            results.append(
                {
                    "file": item.name,
                    "expected": item.kind,
                    "got": "parse_error",
                    "error": str(exc),
                    "lang": item.lang,
                }
            )
            continue
        results.append(
            {
                "file": item.name,
                "expected": item.kind,
                "got": got.kind.value,
                "lang": item.lang,
                "return_date": got.return_date.isoformat() if got.return_date else None,
                "accepted_dates": list(item.dates),
                "evidence": list(got.evidence),
                "reply_text": got.reply_text,
                "left_company": got.left_company,
                "new_contact": got.new_contact,
                **item.extra,
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
        lang = str(r["lang"])
        dates[lang]["total"] += 1
        accepted = r.get("accepted_dates") or []
        assert isinstance(accepted, list)
        ok = (r.get("return_date") in accepted) if accepted else r.get("return_date") is None
        dates[lang]["correct"] += int(bool(ok) and r["got"] == "out_of_office")
        r["date_ok"] = bool(ok)
    human_to_auto = [r for r in results if r["expected"] == "human_reply" and r["got"] in AUTOMATIC]
    correct = sum(1 for r in results if r["expected"] == r["got"])
    date_total = sum(d["total"] for d in dates.values())
    date_correct = sum(d["correct"] for d in dates.values())
    return {
        "messages": len(results),
        "kind_accuracy": correct / max(1, len(results)),
        "kind_correct": correct,
        "per_kind": per_kind,
        "confusion": {k: dict(v) for k, v in confusion.items()},
        "return_dates": dict(dates),
        "return_date_accuracy": date_correct / max(1, date_total),
        "human_taken_for_automatic": [r["file"] for r in human_to_auto],
        "errors": [r for r in results if r["expected"] != r["got"]],
        "date_errors": [r for r in results if r.get("date_ok") is False],
        "results": results,
        "seconds": elapsed,
    }


def print_report(report: dict[str, object], console: Console, show_errors: bool, title: str = "") -> None:
    per_kind = report["per_kind"]
    assert isinstance(per_kind, dict)
    table = Table(title=f"{title}Kind accuracy: {report['kind_accuracy']:.1%} of {report['messages']}")
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
    dt = Table(title=f"Out-of-office return dates per language ({report['return_date_accuracy']:.1%})")
    dt.add_column("language")
    dt.add_column("correct", justify="right")
    for lang, row in sorted(dates.items()):
        dt.add_row(lang, f"{row['correct']}/{row['total']}")
    console.print(dt)
    human = report["human_taken_for_automatic"]
    assert isinstance(human, list)
    style = "bold green" if not human else "bold red"
    console.print(f"[{style}]Human replies taken for automatic: {len(human)}[/] {human or ''}")
    if show_errors:
        for err in report["errors"]:  # type: ignore[attr-defined]
            console.print(
                f"[red]{err['file']}[/] expected {err['expected']} got {err['got']} {err.get('evidence')}",
                markup=True,
                highlight=False,
            )
        for err in report["date_errors"]:  # type: ignore[attr-defined]
            console.print(
                f"[yellow]date {err['file']}[/] got {err.get('return_date')} "
                f"accepted {err.get('accepted_dates')} {err.get('evidence')}"
            )
