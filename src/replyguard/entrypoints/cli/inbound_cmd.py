"""`replyguard ingest PATH...`, `replyguard inbound list` and `replyguard inbound retry`.

`ingest` reads .eml files, mbox files (plain or gzip/bzip2/xz), Maildir folders and stdin.
Every message is stored before anything else; one that cannot be processed is retried, then
quarantined, and the run goes on: a bad message never stops the ones behind it.

A file that is not an email at all (empty, or no header section: a README, a CSV) is refused
and not stored: it is still on disk, and storing it would keep it for good as unparsable.
Standard input is different: what an MTA pipes in exists nowhere else, so it is stored
whatever it is. A message read from a file records where (`file:PATH`, its end when long) as
its source, so that `inbound list` leads back to the file.

Exit codes: 0 every message was stored (some may be kept for a person: the run says so),
1 a file was refused as not an email (the other messages are stored) or the database refused
a store (the messages before it are stored; run again), 2 a path cannot be read as mail
(missing, an archive, UTF-16).
"""

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from replyguard.entrypoints.cli.options import ListJson

inbound_app = typer.Typer(no_args_is_help=True, help="Inbound messages kept for a person.")

#: What each status tells the person running `ingest` (statuses not listed need nothing).
_WARNINGS = {
    "unparsable": "kept but not parsed",
    "quarantined": "kept; processing failed every attempt (replyguard inbound retry ID)",
    "refused": "kept for a person but not processed",
    "stored": "kept; processing will be retried",
}


def register(app: typer.Typer) -> None:
    """Add `ingest` and the `inbound` group to the CLI."""
    app.command("ingest")(ingest)
    app.add_typer(inbound_app, name="inbound")


def ingest(
    ctx: typer.Context,
    paths: Annotated[
        list[str], typer.Argument(help=".eml files, mbox files, Maildir folders, or - for stdin")
    ],
    history: Annotated[
        bool,
        typer.Option("--history", help="Old mail (an export): recorded as history, never as fresh replies."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the counts and every message's outcome as JSON.")
    ] = False,
) -> None:
    """Store, classify and match inbound mail; each reply takes effect in one transaction."""
    from sqlalchemy.exc import SQLAlchemyError

    from replyguard.adapters.mail_files import MailSourceError, iter_messages, total_size
    from replyguard.domain.inbound.parse import not_mail
    from replyguard.entrypoints.cli.app import emit_json, err, error_line, fail, open_app, out, progress_bar
    from replyguard.service_layer.inbound.quarantine import retry_stored

    instance = open_app(ctx)
    counts: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    origin = ""
    try:
        retry_stored(instance)  # what an earlier run left unprocessed
        with progress_bar() as progress:
            task = progress.add_task("ingesting", total=total_size(paths) or None)
            items = iter_messages(
                paths,
                sys.stdin.buffer,
                lambda n: progress.advance(task, n),
                max_bytes=instance.settings.message_max_bytes,
            )
            for item in items:
                origin = item.origin
                why = not_mail(item.raw) if origin != "-" else None
                if why is not None:
                    error_line(f"{origin}: not an email: {why}; not stored")
                    entry = _not_stored(origin, why)
                else:
                    entry = _ingest_one(instance, item, _source(origin, history=history))
                status = entry["status"]
                counts[status] = counts.get(status, 0) + 1
                if as_json:  # kept only for the JSON report: a plain run stays flat in memory
                    results.append(entry)
                if status in _WARNINGS:
                    note = f"{_WARNINGS[status]}: {entry['detail']}" if entry["detail"] else _WARNINGS[status]
                    err.print(
                        f"[yellow]{escape(item.origin)}:[/] inbound {entry['inbound_id']} {escape(note)}",
                        markup=True,
                    )
    except MailSourceError as exc:
        fail(str(exc), code=2)
    except SQLAlchemyError as exc:
        fail(
            f"{origin or 'the first message'}: could not be stored ({exc.__class__.__name__}); "
            "the messages before it are stored: run again"
        )
    finally:
        instance.close()
    if as_json:
        emit_json({"counts": counts, "messages": results})
    else:
        out.print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no messages")
    if counts.get(NOT_MAIL):
        raise typer.Exit(1)


#: The status a file that is not an email gets in the report (it has no inbound row).
NOT_MAIL = "not_mail"


def _source(origin: str, *, history: bool) -> str:
    from replyguard.domain.inbound.status import file_source, history_source

    if origin == "-":
        return history_source("stdin") if history else "stdin"
    return file_source(origin, history=history)


def _not_stored(origin: str, why: str) -> dict[str, Any]:
    return {
        "origin": origin,
        "inbound_id": None,
        "status": NOT_MAIL,
        "kind": None,
        "lead_ids": [],
        "detail": why,
    }


def _ingest_one(instance: Any, item: Any, source: str) -> dict[str, Any]:
    from replyguard.service_layer.inbound.ingest import ingest_raw
    from replyguard.service_layer.inbound.quarantine import keep_refused

    if item.refused is not None:
        inbound_id = keep_refused(instance, item.raw, source, item.refused)
        return {
            "origin": item.origin,
            "inbound_id": inbound_id,
            "status": "refused",
            "kind": None,
            "lead_ids": [],
            "detail": item.refused,
        }
    result = ingest_raw(instance, item.raw, source=source)
    return {
        "origin": item.origin,
        "inbound_id": result.inbound_id,
        "status": "duplicate" if result.duplicate else result.status,
        "kind": result.kind,
        "lead_ids": list(result.lead_ids),
        "detail": result.detail,
    }


@inbound_app.command("list")
def inbound_list(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="stored, matched, probable, unmatched, unparsable, quarantined, refused, or all. "
            "Default: everything kept for a person (quarantined, refused, unparsable, unmatched, probable).",
        ),
    ] = None,
    as_json: ListJson = False,
) -> None:
    """Inbound messages, by status; by default those kept for a person."""
    from rich.table import Table

    from replyguard.domain.inbound.status import NEEDS_A_PERSON, parse_status
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.inbound.views import list_inbound

    wanted = None
    if status is None:
        wanted = list(NEEDS_A_PERSON)
    elif status.strip().lower() != "all":
        try:
            wanted = [parse_status(status)]
        except ValueError as exc:
            fail(str(exc), code=2)
    instance = open_app(ctx)
    try:
        items = list_inbound(instance, wanted)
    finally:
        instance.close()
    if as_json:
        emit_json(items)
        return
    table = Table(title=f"inbound: {status or 'kept for a person'}")
    for column in ("id", "status", "received", "source", "kind", "message-id", "error"):
        table.add_column(column)
    for item in items:
        table.add_row(
            str(item["id"]),
            item["status"],
            item["received_at"],
            item["source"],
            item["kind"] or "-",
            item["message_id"] or "-",
            item["error"] or "",
        )
    out.print(table)


@inbound_app.command("retry")
def inbound_retry(
    ctx: typer.Context,
    ids: Annotated[
        list[int] | None,
        typer.Argument(help="Inbound ids; without any, every quarantined and every unprocessed one."),
    ] = None,
    as_json: ListJson = False,
) -> None:
    """Process quarantined messages again (after their cause was fixed). Applied once, ever."""
    from replyguard.domain.inbound.status import IllegalInboundMove, InboundStatus
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.inbound.quarantine import retry
    from replyguard.service_layer.inbound.views import list_inbound

    instance = open_app(ctx)
    try:
        if not ids:
            pending = list_inbound(instance, [InboundStatus.QUARANTINED, InboundStatus.STORED])
            ids = [item["id"] for item in pending]
        results = retry(instance, ids)
    except (LookupError, IllegalInboundMove) as exc:
        fail(str(exc))
    finally:
        instance.close()
    rows = [{"inbound_id": r.inbound_id, "status": r.status, "detail": r.detail} for r in results]
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        out.print(f"inbound {row['inbound_id']}: {row['status']} {row['detail']}".rstrip(), highlight=False)
    out.print(f"{len(rows)} retried")
