"""What the template budget costs per rendered email, against the other way to bound a render.

Usage: .venv/bin/python bench/template_budget.py [--emails 5000] [--before PATH]

One ordinary email template (fields, a default, a condition, a filter, a loop of three) is
rendered for `--emails` leads in each of these ways:

* bare: Jinja's own SandboxedEnvironment, compiled once (no limits at all);
* before: the engine before issue 21 (`--before src/replyguard/domain/templates.py` of an older
  checkout, e.g. `git show main:src/replyguard/domain/templates.py > /tmp/before.py`), if given;
* budgeted: `replyguard.domain.templates.render`, what every email is rendered with now;
* subprocess: the same render in one long-lived child process with CPU and memory limits
  (RLIMIT_CPU, RLIMIT_AS), one request and answer over a pipe per email (the cheapest form of
  the "render process" alternative; a runaway render would kill the child and a new one would
  be forked, not counted here);
* fork per email: a fresh forked child per render (what a hard per-render timeout without a
  shared child costs).

Prints µs per email (median of 5 rounds) and writes bench/results/template_budget.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result
from jinja2.sandbox import SandboxedEnvironment
from rich.console import Console
from rich.table import Table

from replyguard.domain.templates import Budget, render

TEMPLATE = (
    "Hi {{ first_name | default('there') }},\n\n"
    "I noticed {{ company }} is growing{% if title %} and that you lead {{ title | lower }}{% endif %}.\n"
    "Three things teams like yours ask about:\n"
    "{% for item in ['reports', 'forecasts', 'alerts'] %}- {{ item | capitalize }}\n{% endfor %}\n"
    "Would a short call next week help?\n\nBest,\n{{ owner }}\n"
)
LEAD = {
    "first_name": "Priya",
    "last_name": "Raman",
    "full_name": "Priya Raman",
    "company": "Fernhollow",
    "title": "Data Engineering",
    "email": "priya@fernhollow.test",
    "timezone": "Europe/Berlin",
    "owner": "sam@atlas.test",
}


def _child(conn: Connection) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (30, 30))
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    while True:
        request = conn.recv()
        if request is None:
            return
        source, values = request
        conn.send(render(source, values, "body"))


def _forked_render(conn: Connection) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    conn.send(render(TEMPLATE, LEAD, "body"))


def _per_email(fn: Callable[[], Any], emails: int, rounds: int = 5) -> float:
    """Median over `rounds` of the seconds per call, in µs."""
    per: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(emails):
            fn()
        per.append((time.perf_counter() - started) / emails * 1e6)
    return statistics.median(per)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emails", type=int, default=5000)
    parser.add_argument("--before", type=Path, help="an older domain/templates.py to compare with")
    args = parser.parse_args()
    expected = render(TEMPLATE, LEAD, "body")
    rows: dict[str, float] = {}

    bare = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True).from_string(TEMPLATE)
    assert bare.render(**LEAD) == expected
    rows["bare Jinja sandbox (no limits)"] = _per_email(lambda: bare.render(**LEAD), args.emails)

    if args.before:
        spec = importlib.util.spec_from_file_location("templates_before", args.before)
        assert spec and spec.loader
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        assert before.render(TEMPLATE, LEAD, "body") == expected
        rows["before issue 21 (no budget)"] = _per_email(
            lambda: before.render(TEMPLATE, LEAD, "body"), args.emails
        )

    budget = Budget()
    render(TEMPLATE, LEAD, "body", budget=budget)
    rows["budgeted (in process, now)"] = _per_email(lambda: render(TEMPLATE, LEAD, "body"), args.emails)

    context = multiprocessing.get_context("fork")
    parent, child_end = context.Pipe()
    child = context.Process(target=_child, args=(child_end,), daemon=True)
    child.start()

    def roundtrip() -> None:
        parent.send((TEMPLATE, LEAD))
        assert parent.recv() == expected

    rows["subprocess with rlimits (pipe per email)"] = _per_email(roundtrip, args.emails)
    parent.send(None)
    child.join()

    def forked() -> None:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_forked_render, args=(send,))
        process.start()
        assert receive.recv() == expected
        process.join()

    rows["fork per email"] = _per_email(forked, max(20, args.emails // 50), rounds=3)

    base = rows["bare Jinja sandbox (no limits)"]
    table = Table(title=f"One ordinary email template, µs per email (median of rounds, {args.emails} emails)")
    for column in ("engine", "µs / email", "× bare"):
        table.add_column(column, justify="left" if column == "engine" else "right")
    for name, micros in rows.items():
        table.add_row(name, f"{micros:,.1f}", f"{micros / base:.2f}")
    Console().print(table)
    print(f"operations this template spends per render: {budget.used} (budget {budget.operations:,})")
    path = write_result(
        "template_budget",
        {
            "emails": args.emails,
            "us_per_email": rows,
            "operations_per_render": budget.used,
            "pid": os.getpid(),
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
