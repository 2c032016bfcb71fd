"""TEST-ONLY: the `replyguard` command line with failpoints armed, for the fault campaign's
worker processes (bench/torture.py, tests/integration/test_kill_points.py).

    python tests/support/fault_worker.py --failpoints SPEC [--seed N] [--broken-guard] -- ARGS...

SPEC is `point=action@probability,...` (tests/support/failpoints.py). The product reads no
failpoint from anywhere: this file lives outside the package and hands its hooks to the
command line's own entry point (`main(argv, hooks=...)`), which passes them to `bootstrap`.
`--broken-guard` also swaps in the worker whose send guard re-checks nothing
(bench/broken_guard_worker.py), for proving the campaign's checker can fail.
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the project imports

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from replyguard.entrypoints.cli.app import main as cli
from tests.support.failpoints import Failpoints

#: How a harness starts one: the interpreter running this file.
COMMAND = [sys.executable, str(Path(__file__).resolve())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failpoints", default="", help="point=action@probability,...")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken-guard", action="store_true")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = options.args[1:] if options.args[:1] == ["--"] else options.args
    if options.broken_guard:
        from bench.broken_guard_worker import break_the_guard

        break_the_guard()
    cli(args, hooks=Failpoints.parse(options.failpoints, options.seed))


if __name__ == "__main__":
    main()
