"""`replyguard inspect FILE [--json]`: classify one message and show why.

A thin entry point: read bytes, call the pure classifier, print. Exit codes: 0 classified,
2 the input could not be read or is not an email message (the reason goes to stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from replyguard.domain.inbound import Classification, MessageParseError, classify

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _read(path: Path) -> bytes:
    if str(path) == "-":
        return sys.stdin.buffer.read()
    return path.read_bytes()


def _print_table(result: Classification) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, title="replyguard inspect")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("kind", result.kind.value)
    table.add_row("return date", result.return_date.isoformat() if result.return_date else "-")
    table.add_row("subject", result.subject)
    table.add_row("from", result.from_address or "-")
    table.add_row("evidence", ", ".join(result.evidence))
    if result.bounce:
        b = result.bounce
        table.add_row("bounce", f"{b.reason} status={b.status} recipient={b.recipient}")
        table.add_row("original message", b.original_message_id or "-")
    if result.left_company:
        table.add_row("left company", f"yes; new contact: {result.new_contact or '-'}")
    table.add_row("reply text", result.reply_text or "(empty)")
    Console().print(table)


def inspect_command(path: Path, as_json: bool) -> int:
    """Classify the message at `path` (`-` for stdin) and print it; return the exit code."""
    try:
        raw = _read(path)
    except OSError as exc:
        sys.stderr.write(f"replyguard inspect: cannot read {path}: {exc.strerror or exc}\n")
        return EXIT_BAD_INPUT
    try:
        result = classify(raw)
    except MessageParseError as exc:
        sys.stderr.write(f"replyguard inspect: {path} is not a readable email: {exc}\n")
        return EXIT_BAD_INPUT
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        _print_table(result)
    return EXIT_OK
