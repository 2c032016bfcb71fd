"""The `replyguard` script: `inspect` runs before the rest of the CLI is imported.

Why: importing the whole CLI (SQLAlchemy, Alembic, FastAPI, Typer, Rich) costs far more than
classifying a message; `inspect` needs none of it. Global options before the command (--db,
--now, --workspace, --transport) are skipped: inspect does not use them.
"""

from __future__ import annotations

import sys

_VALUED = frozenset({"--db", "--now", "--workspace", "--transport"})


def _command(argv: list[str]) -> int | None:
    """Index of the command word in argv, skipping global options and their values."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _VALUED:
            i += 2
        elif word.startswith("--"):
            i += 1
        else:
            return i
    return None


def main() -> None:
    argv = sys.argv[1:]
    at = _command(argv)
    if at is not None and argv[at] == "inspect" and not {"-h", "--help"} & set(argv[at + 1 :]):
        from replyguard.entrypoints.cli.inspect_cmd import run

        sys.exit(run(argv[at + 1 :]))
    from replyguard.entrypoints.cli.app import main as full

    full()
