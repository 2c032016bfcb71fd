"""`replyguard inspect PATH... [--json]`: classify messages and show why, without a database.

PATH is an .eml file, an mbox, a Maildir (or a folder of them) or `-` for stdin; any number of
them. With --json each message is one JSON line (JSON Lines) with its `origin` (the file, or
`file#n` for the n-th message of an mbox); without, a table per message.

Fast path: `launcher.main` calls `run(argv)` for `inspect` before the rest of the CLI is
imported, so inspect pays for the classifier only (no SQLAlchemy, no HTTP stack, no Typer).
Exit codes: 0 every message classified, 2 some input could not be read or is not an email
(each reason on stderr; the other messages are still printed).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

if TYPE_CHECKING:
    import typer

    from replyguard.domain.inbound import Classification

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def sent_by_us(raw: bytes, result: Classification) -> str | None:
    """The send key of an email replyguard itself sent (its Message-ID `<rg.KEY@domain>` and its
    X-Replyguard-Send-Key header agree), else None. Ingest recognises its own mail by the
    Message-IDs in the database and keeps it as `ours`, never as a reply; inspect has no
    database and reads what the email says of itself."""
    from email.parser import BytesHeaderParser
    from email.policy import default

    from replyguard.domain.message_ids import send_key_of

    key = send_key_of(result.message_id) if result.message_id else None
    if key is None:
        return None
    try:
        header = BytesHeaderParser(policy=default).parsebytes(raw).get("X-Replyguard-Send-Key")
    except (ValueError, TypeError):  # a header that does not parse: not one we wrote
        return None
    return key if header is not None and str(header).strip() == key else None


def _print_table(result: Classification, origin: str, ours: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, title=f"replyguard inspect {origin}")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    if ours is not None:
        table.add_row("kind", f"ours: an email replyguard sent (send key {ours}), never a reply")
    else:
        table.add_row("kind", result.kind.value)
    table.add_row("return date", result.return_date.isoformat() if result.return_date else "-")
    table.add_row("subject", result.subject)
    table.add_row("from", result.from_address or "-")
    table.add_row("evidence", ", ".join(result.evidence))
    if result.bounce:
        b = result.bounce
        table.add_row("bounce", f"{b.reason} ({b.why}) status={b.status} recipient={b.recipient}")
        table.add_row("original message", b.original_message_id or "-")
    if result.left_company:
        table.add_row("left company", f"yes; new contact: {result.new_contact or '-'}")
    table.add_row("reply text", result.reply_text or "(empty)")
    Console().print(table)


def _one(item_origin: str, raw: bytes, as_json: bool) -> bool:
    import json

    from replyguard.domain.inbound import MessageParseError, classify

    try:
        result = classify(raw)
    except MessageParseError as exc:
        sys.stderr.write(f"replyguard inspect: {item_origin} is not a readable email: {exc}\n")
        return False
    ours = sent_by_us(raw, result)
    if as_json:
        fields = {"origin": item_origin, **result.to_json(), "ours": ours is not None}
        if ours is not None:
            fields["kind"] = "ours"
        sys.stdout.write(json.dumps(fields, ensure_ascii=False) + "\n")
    else:
        _print_table(result, item_origin, ours)
    return True


def inspect_paths(paths: list[str], as_json: bool) -> int:
    """Classify every message under `paths` and print it; return the exit code."""
    # Imported here, not at the top: `replyguard --help` imports this module to list the
    # command, and the classifier's rules are a fifth of a second of start-up.
    from replyguard.adapters.mail_files import MailSourceError, iter_messages

    status = EXIT_OK
    for path in paths:
        seen = 0
        try:
            for item in iter_messages([path], sys.stdin.buffer):
                seen += 1
                status = status if _one(item.origin, item.raw, as_json) else EXIT_BAD_INPUT
        except (MailSourceError, OSError) as exc:
            sys.stderr.write(f"replyguard inspect: cannot read {path}: {exc}\n")
            status = EXIT_BAD_INPUT
            continue
        if not seen:
            sys.stderr.write(f"replyguard inspect: {path} is not a readable email: no message in it\n")
            status = EXIT_BAD_INPUT
    return status


def run(argv: list[str]) -> int:
    """The fast path: `argv` are the arguments after `inspect`."""
    import argparse  # here, not at the top: `replyguard --help` imports this module too

    parser = argparse.ArgumentParser(prog="replyguard inspect", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--json", action="store_true", dest="as_json", help="one JSON line per message")
    args = parser.parse_args(argv)
    return inspect_paths(list(args.paths), args.as_json)


def register(app: typer.Typer) -> None:
    """The same command in the Typer app (help, `python -m replyguard`)."""
    import typer

    def inspect(paths: list[str], as_json: bool = False) -> None:
        """Classify emails (files, mbox, Maildir, -) without touching any database."""
        raise typer.Exit(inspect_paths(paths, as_json))

    # Real objects, not the strings `from __future__ import annotations` would leave: Typer
    # resolves annotations in this module's globals, where typer is not imported (fast path).
    inspect.__annotations__ = {
        "paths": Annotated[list[str], typer.Argument(help=".eml, mbox, Maildir or - (stdin)")],
        "as_json": Annotated[bool, typer.Option("--json", help="One JSON line per message.")],
        "return": None,
    }
    app.command("inspect")(inspect)
