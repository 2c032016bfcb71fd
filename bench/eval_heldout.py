"""Classification accuracy on the held-out set (tests/fixtures/heldout/build.py), built in memory.

Usage: .venv/bin/python bench/eval_heldout.py [--out PATH] [--show-errors]

The held-out messages were authored independently of the shared corpus the rules were tuned
on, so this is the better estimate of accuracy on unseen mail. Prints the same report as
bench/eval_classifier.py plus left-company / new-contact checks, and writes JSON to
bench/results/eval_heldout.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import REPO, Item, print_report, score

BUILD = REPO / "tests" / "fixtures" / "heldout" / "build.py"
ROUND2 = REPO / "tests" / "fixtures" / "heldout" / "round2.py"
ROUND3 = REPO / "tests" / "fixtures" / "heldout" / "round3.py"
ROUND4 = REPO / "tests" / "fixtures" / "heldout" / "round4.py"


def load_build(path: Path = BUILD, name: str = "heldout_build") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def heldout_items() -> list[Item]:
    cases = load_build().build()
    return [
        Item(c.name, c.kind, c.dates, c.raw, c.lang,
             {"expected_left_company": c.left_company, "expected_new_contact": c.new_contact})
        for c in cases
    ]  # fmt: skip


def round2_items() -> list[Item]:
    """Round 2 (issue 11): bounces with sisimai reasons, odd notices, return dates."""
    cases = load_build(ROUND2, "heldout_round2").build()
    return [Item(c.name, c.kind, c.dates, c.raw, c.lang, {"expected_reason": c.reason}) for c in cases]


def round3_items() -> list[Item]:
    """Round 3 (issue 11): out-of-office return dates only, written after the date work."""
    cases = load_build(ROUND3, "heldout_round3").build()
    return [Item(c.name, c.kind, c.dates, c.raw, c.lang, {}) for c in cases]


def round4_items() -> list[Item]:
    """Round 4 (issue 22): absences by their dates; never tuned on."""
    cases = load_build(ROUND4, "heldout_round4").build()
    return [Item(c.name, c.kind, c.dates, c.raw, c.lang, {}) for c in cases]


def evaluate_round2() -> dict[str, object]:
    """Kinds, return dates and human safety as for round 1, plus bounce reason accuracy."""
    report = score(round2_items())
    results = report.pop("results")
    assert isinstance(results, list)
    reasons = [r for r in results if r.get("expected_reason")]
    got = {r["file"]: r for r in results}
    ok = [r for r in reasons if f"bounce:{r['expected_reason']}" in (got[r["file"]].get("evidence") or [])]
    report["reasons"] = {
        "total": len(reasons),
        "correct": len(ok),
        "failures": [
            {"file": r["file"], "expected": r["expected_reason"], "evidence": r.get("evidence")}
            for r in reasons
            if r not in ok
        ],
    }
    return report


def evaluate() -> dict[str, object]:
    report = score(heldout_items())
    results = report["results"]
    assert isinstance(results, list)
    checks = [r for r in results if r.get("expected_left_company") is not None]
    report["left_company"] = {
        "total": len(checks),
        "correct": sum(
            1
            for r in checks
            if r["left_company"] == r["expected_left_company"]
            and r["new_contact"] == r["expected_new_contact"]
        ),
        "failures": [
            {k: r[k] for k in ("file", "left_company", "new_contact", "expected_new_contact")}
            for r in checks
            if r["left_company"] != r["expected_left_company"]
            or r["new_contact"] != r["expected_new_contact"]
        ],
    }
    report.pop("results")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "eval_heldout.json")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)
    console = Console()
    report = evaluate()
    print_report(report, console, args.show_errors, title="Held-out set. ")
    left = report["left_company"]
    assert isinstance(left, dict)
    console.print(f"Left company + new contact right: {left['correct']}/{left['total']}")
    if args.show_errors:
        for failure in left["failures"]:
            console.print(f"[cyan]left {failure}[/]")
    console.print(f"{report['messages']} messages in {report['seconds']:.2f}s")
    second = evaluate_round2()
    print_report(second, console, args.show_errors, title="Held-out round 2 (issue 11). ")
    reasons = second["reasons"]
    assert isinstance(reasons, dict)
    console.print(f"Bounce reasons right: {reasons['correct']}/{reasons['total']}")
    if args.show_errors:
        for failure in reasons["failures"]:
            console.print(f"[cyan]reason {failure}[/]", highlight=False)
    report["round2"] = second
    third = score(round3_items())
    third.pop("results")
    print_report(third, console, args.show_errors, title="Held-out round 3 (issue 11, dates). ")
    report["round3"] = third
    fourth = score(round4_items())
    fourth.pop("results")
    print_report(fourth, console, args.show_errors, title="Held-out round 4 (issue 22, absences). ")
    report["round4"] = fourth
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    console.print(f"Report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
