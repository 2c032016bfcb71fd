"""Bounces judged against sisimai's own expectations, on ../shared/corpus-bounces (read in place).

Usage: .venv/bin/python bench/eval_bounces.py [--corpus PATH] [--out PATH] [--show-errors]

The corpus holds 629 real delivery failures (sisimai's "set-of-emails", BSD-2-Clause) and
`expectations.tsv`: per failed recipient, sisimai's reason and hard/soft verdict. Each file is
classified once and compared with its first recipient's row (recipient_index 0):

- reason accuracy: our reason equals sisimai's (rows whose reason is a failure);
- hard/soft: a confusion table of sisimai's verdict against ours (or "not a bounce");
- every hard/soft disagreement is either a written policy of ours
  (`replyguard.domain.inbound.bounce_policy.POLICIES`, printed as such) or an error;
- targets (issue 11): reason accuracy >= 90%; of our hard verdicts >= 95% agree with sisimai
  or are listed policy; hard recall (sisimai hard that we call hard) >= 95%.

Rows with reason `delivered` or `vacation` are not failures: they must not be bounces.
Files without expectations must still be recognised: never taken for a person's reply.
Writes JSON to bench/out/eval_bounces.json (an ignored folder).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import REPO, read_tsv

from replyguard.domain.inbound import MessageParseError, classify
from replyguard.domain.inbound.bounce_policy import POLICIES, policy_for, reason_group

NOT_FAILURES = {"delivered", "vacation"}
TARGETS = {"reason_accuracy": 0.90, "hard_agreement": 0.95, "hard_recall": 0.95}


def _ours(raw: bytes) -> dict[str, Any]:
    try:
        got = classify(raw)
    except MessageParseError as exc:
        return {"kind": "parse_error", "reason": None, "hard": None, "evidence": [str(exc)]}
    bounce = got.bounce
    verdict = None
    if got.kind.value in {"bounce_hard", "bounce_soft"}:
        verdict = "hard" if got.kind.value == "bounce_hard" else "soft"
    return {
        "kind": got.kind.value,
        "reason": bounce.reason if bounce else None,
        "status": bounce.status if bounce else None,
        "verdict": verdict,
        "evidence": list(got.evidence),
    }


def evaluate(corpus: Path) -> dict[str, Any]:
    rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in read_tsv(corpus / "expectations.tsv"):
        rows[row["file"]].append(row)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for path in sorted((corpus / "maildir").glob("*.eml")):
        ours = _ours(path.read_bytes())
        expected = sorted(rows.get(path.name, []), key=lambda r: int(r["recipient_index"]))
        first = expected[0] if expected else None
        results.append({
            "file": path.name,
            "expected_reason": first["reason"] if first else None,
            "expected_verdict": first["sisimai_severity"] if first else None,
            "expected_status": first["status"] if first else None,
            **ours,
        })  # fmt: skip
    elapsed = time.perf_counter() - started
    return {"corpus": str(corpus), "messages": len(results), "seconds": elapsed, **_score(results)}


def _score(results: list[dict[str, Any]]) -> dict[str, Any]:
    failures = [r for r in results if r["expected_reason"] and r["expected_reason"] not in NOT_FAILURES]
    not_failures = [r for r in results if r["expected_reason"] in NOT_FAILURES]
    unlabelled = [r for r in results if not r["expected_reason"]]
    reason_ok = [r for r in failures if r["reason"] == r["expected_reason"]]
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    policy, errors = [], []
    for r in failures:
        got = r["verdict"] or "not a bounce"
        confusion[r["expected_verdict"]][got] += 1
        groups[reason_group(r["expected_reason"])][reason_group(r["reason"]) if r["reason"] else "-"] += 1
        if got == r["expected_verdict"]:
            continue
        rule = policy_for(r["reason"], r["status"], r["evidence"]) if r["verdict"] else None
        if rule is not None and rule.verdict == got:
            policy.append({**r, "policy": rule.name})
        else:
            errors.append(r)
    ours_hard = [r for r in failures if r["verdict"] == "hard"]
    by_policy = {r["file"] for r in policy}
    hard_agree = [r for r in ours_hard if r["expected_verdict"] == "hard" or r["file"] in by_policy]
    sisimai_hard = [r for r in failures if r["expected_verdict"] == "hard"]
    recalled = [r for r in sisimai_hard if r["verdict"] == "hard"]
    wrongly_bounce = [r for r in not_failures if r["verdict"]]
    # Taken for a person's reply: the one thing a bounce, a complaint or a report must not be.
    unrecognised = [r for r in unlabelled if r["kind"] == "human_reply"]
    return {
        "failures": len(failures),
        "reason_correct": len(reason_ok),
        "reason_accuracy": len(reason_ok) / max(1, len(failures)),
        "hard_verdicts": len(ours_hard),
        "hard_agreement": len(hard_agree) / max(1, len(ours_hard)),
        "sisimai_hard": len(sisimai_hard),
        "hard_recall": len(recalled) / max(1, len(sisimai_hard)),
        "confusion": {k: dict(v) for k, v in confusion.items()},
        "group_confusion": {k: dict(v) for k, v in groups.items()},
        "policy_disagreements": policy,
        "verdict_errors": errors,
        "reason_errors": [r for r in failures if r["reason"] != r["expected_reason"]],
        "not_failures": len(not_failures),
        "not_failures_taken_for_bounces": wrongly_bounce,
        "unlabelled": len(unlabelled),
        "unlabelled_unrecognised": unrecognised,
        "unlabelled_kinds": dict(Counter(r["kind"] for r in unlabelled)),
    }


def _print(report: dict[str, Any], console: Console, show_errors: bool) -> None:
    def line(name: str, value: float, detail: str) -> None:
        ok = value >= TARGETS[name]
        style = "green" if ok else "red"
        console.print(f"[{style}]{name}: {value:.1%}[/] (target {TARGETS[name]:.0%}) {detail}")

    console.print(f"{report['messages']} messages, {report['failures']} with a failure reason")
    line("reason_accuracy", report["reason_accuracy"], f"{report['reason_correct']}/{report['failures']}")
    line("hard_agreement", report["hard_agreement"], f"of {report['hard_verdicts']} hard verdicts")
    line("hard_recall", report["hard_recall"], f"of {report['sisimai_hard']} sisimai hard")
    table = Table(title="Hard/soft (rows: sisimai, columns: ours)")
    columns = ["hard", "soft", "not a bounce"]
    table.add_column("sisimai \\ ours")
    for c in columns:
        table.add_column(c, justify="right")
    for verdict in ("hard", "soft"):
        counts = report["confusion"].get(verdict, {})
        table.add_row(verdict, *(str(counts.get(c, 0)) for c in columns))
    console.print(table)
    groups = report["group_confusion"]
    names = sorted({g for row in groups.values() for g in row} | set(groups))
    gt = Table(title="Reason groups (rows: sisimai, columns: ours)")
    gt.add_column("sisimai \\ ours")
    for g in names:
        gt.add_column(g, justify="right")
    for g in sorted(groups):
        gt.add_row(g, *(str(groups[g].get(n, "")) for n in names))
    console.print(gt)
    console.print(f"[bold]Deliberate disagreements (policy): {len(report['policy_disagreements'])}[/]")
    for r in report["policy_disagreements"]:
        console.print(f"  {r['file']}: sisimai {r['expected_reason']}/{r['expected_verdict']}, "
                      f"ours {r['reason']}/{r['verdict']} — policy {r['policy']}")  # fmt: skip
    for name, rule in POLICIES.items():
        console.print(f"  [dim]policy {name}: {rule.why}[/]")
    errs = report["verdict_errors"]
    console.print(f"[{'red' if errs else 'green'}]Hard/soft errors (not policy): {len(errs)}[/]")
    for r in errs:
        console.print(f"  {r['file']}: sisimai {r['expected_reason']}/{r['expected_verdict']} "
                      f"ours {r['kind']} {r['reason']} {r['evidence']}", highlight=False)  # fmt: skip
    wrong = report["not_failures_taken_for_bounces"]
    console.print(
        f"Not failures (delivered, vacation): {report['not_failures']}, taken for bounces: {len(wrong)}"
    )
    unrec = report["unlabelled_unrecognised"]
    console.print(
        f"Without expectations: {report['unlabelled']} {report['unlabelled_kinds']}; "
        f"unrecognised: {len(unrec)} {[r['file'] for r in unrec]}"
    )
    if show_errors:
        for r in report["reason_errors"]:
            console.print(f"[yellow]{r['file']}[/] sisimai {r['expected_reason']} ({r['expected_status']}) "
                          f"ours {r['reason']} ({r['status']}) {r['evidence']}", highlight=False)  # fmt: skip
    console.print(f"{report['messages']} messages in {report['seconds']:.2f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus-bounces")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "eval_bounces.json")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args(argv)
    console = Console(width=160)
    if not (args.corpus / "expectations.tsv").is_file():
        console.print(f"No corpus at {args.corpus} (expectations.tsv missing): nothing to evaluate.")
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
