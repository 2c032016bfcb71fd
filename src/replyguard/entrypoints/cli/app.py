"""`replyguard` command line: thin commands over the service layer.

Global options: `--db URL` (env REPLYGUARD_DATABASE_URL, default sqlite:///replyguard.db),
`--now ISO-8601` (env REPLYGUARD_NOW: a simulated clock), `--workspace NAME`,
`--transport SPEC` (env REPLYGUARD_TRANSPORT: maildir:PATH, smtp://..., smtps://...).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from replyguard.bootstrap import App, WorkspaceMissing, bootstrap

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Outbound sequences that stop when a person answers.",
)
leads_app = typer.Typer(no_args_is_help=True, help="Import, show, stop and resume leads.")
reply_app = typer.Typer(no_args_is_help=True, help="Record replies by hand.")
inbound_app = typer.Typer(no_args_is_help=True, help="Inbound messages kept for a person.")
app.add_typer(leads_app, name="leads")
app.add_typer(reply_app, name="reply")
app.add_typer(inbound_app, name="inbound")

out = Console()
err = Console(stderr=True)


@dataclass
class Options:
    db: str | None
    now: str | None
    workspace: str | None
    transport: str | None

    def app(self, *, running_clock: bool = False) -> App:
        try:
            return bootstrap(
                self.db,
                now=self.now,
                running_clock=running_clock,
                transport=self.transport,
                workspace=self.workspace,
            )
        except ValueError as exc:
            fail(str(exc), code=2)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def opts(ctx: typer.Context) -> Options:
    value = ctx.obj
    assert isinstance(value, Options)
    return value


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (sqlite:///PATH or postgresql://...).")
    ] = None,
    now: Annotated[str | None, typer.Option("--now", help="Simulated current time, ISO-8601.")] = None,
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace name.")] = None,
    transport: Annotated[
        str | None, typer.Option("--transport", help="maildir:PATH, smtp://..., smtps://...")
    ] = None,
) -> None:
    ctx.obj = Options(db, now, workspace, transport)


def open_app(ctx: typer.Context, *, running_clock: bool = False) -> App:
    instance = opts(ctx).app(running_clock=running_clock)
    try:
        _ = instance.workspace_id
    except WorkspaceMissing as exc:
        fail(str(exc))
    except Exception as exc:
        fail(f"cannot open the database: {exc.__class__.__name__}: {str(exc).splitlines()[0]}")
    return instance


@app.command()
def init(ctx: typer.Context) -> None:
    """Create or migrate the database and the workspace."""
    instance = opts(ctx).app()
    workspace_id = instance.init_database()
    out.print(f"database ready; workspace [bold]{instance.workspace}[/] (id {workspace_id})")


@leads_app.command("import")
def leads_import(
    ctx: typer.Context,
    file: Path,
    product: Annotated[str, typer.Option("--product", help="The product these leads belong to.")],
) -> None:
    """Import contacts from a CSV file as leads of a product. Re-importing updates."""
    from replyguard.domain.leads_csv import LeadFileError, read_leads
    from replyguard.service_layer.leads import ImportReport, import_leads

    try:
        rows = list(read_leads(file.read_bytes()))
    except FileNotFoundError:
        fail(f"{file}: no such file", code=2)
    except LeadFileError as exc:
        fail(f"{file}: {exc}", code=2)
    instance = open_app(ctx)
    report = ImportReport()
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"importing {file.name}", total=len(rows))
        for start in range(0, len(rows), 500):
            chunk = rows[start : start + 500]
            with instance.uow() as uow:
                part = import_leads(uow, product, chunk)
                uow.commit()
            report.created += part.created
            report.updated += part.updated
            report.errors += part.errors
            progress.advance(task, len(chunk))
    for problem in report.errors:
        err.print(f"[yellow]{file}:{problem.line}:[/] {problem.message}", highlight=False)
    out.print(f"{report.created} created, {report.updated} updated, {len(report.errors)} rows skipped")
    if report.errors:
        raise typer.Exit(1)


@leads_app.command("show")
def leads_show(
    ctx: typer.Context, email: str, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """A contact and, per product, its reply state, step counts and next due time."""
    from replyguard.service_layer.leads import LeadNotFound, lead_summary

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            summary = lead_summary(uow, email)
    except (LeadNotFound, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json(summary)
        return
    table = Table(title=f"{summary['name']} <{summary['email']}>")
    for column in ("product", "state", "queued", "sent", "cancelled", "next due"):
        table.add_column(column)
    for p in summary["products"]:
        s = p["steps"]
        table.add_row(
            p["product"],
            p["reply_state"],
            str(s["queued"]),
            str(s["sent"]),
            str(s["cancelled"]),
            p["next_due_at"] or "-",
        )
    out.print(table)


def _person_move(ctx: typer.Context, email: str, product: str, target: str, why: str) -> None:
    from replyguard.domain.states import IllegalTransition, ReplyState
    from replyguard.service_layer.actions import set_lead_state
    from replyguard.service_layer.leads import LeadNotFound

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            before = set_lead_state(uow, email, product, ReplyState(target), why=why)
            uow.commit()
    except (LeadNotFound, IllegalTransition) as exc:
        fail(str(exc))
    out.print(f"{email} in {product}: {before} -> {target}")


@leads_app.command("stop")
def leads_stop(
    ctx: typer.Context,
    email: str,
    product: Annotated[str, typer.Option("--product")],
    why: Annotated[str, typer.Option("--why")] = "",
) -> None:
    """Stop a lead: cancels its queued steps."""
    _person_move(ctx, email, product, "stopped", why)


@leads_app.command("resume")
def leads_resume(
    ctx: typer.Context,
    email: str,
    product: Annotated[str, typer.Option("--product")],
    why: Annotated[str, typer.Option("--why")] = "",
) -> None:
    """Return a lead to active (a person's decision; never automatic after a reply)."""
    _person_move(ctx, email, product, "active", why)


@app.command()
def worker(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Send everything due now, then exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Send due steps, guarded by the reply re-check."""
    from replyguard.service_layer.worker import Worker, run_forever

    instance = open_app(ctx, running_clock=not once)
    try:
        transport = instance.transport
    except ValueError as exc:
        fail(str(exc), code=2)
    work = Worker(instance, transport)
    if once:
        report = work.run_once()
    else:
        stopping = {"now": False}

        def _stop(_signum: int, _frame: object) -> None:
            stopping["now"] = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        err.print(
            f"worker running on {instance.engine.url.render_as_string(hide_password=True)}; Ctrl-C stops"
        )
        report = run_forever(work, lambda: stopping["now"], time.sleep)
    instance.close()
    summary = {k: v for k, v in vars(report).items() if k != "outcomes"}
    if as_json:
        emit_json(summary)
    else:
        out.print(", ".join(f"{k} {v}" for k, v in summary.items()))


@reply_app.command("record")
def reply_record(
    ctx: typer.Context,
    lead: Annotated[str, typer.Option("--lead", help="The lead's email (any known address).")],
    product: Annotated[str, typer.Option("--product")],
    kind: Annotated[
        str,
        typer.Option(
            "--kind",
            help="human_reply, out_of_office, auto_reply, bounce_hard, bounce_soft, unsubscribe",
        ),
    ] = "human_reply",
    until: Annotated[
        str | None,
        typer.Option("--until", help="Out-of-office: the date they are back (YYYY-MM-DD)."),
    ] = None,
    text: Annotated[str | None, typer.Option("--text")] = None,
    subject: Annotated[str | None, typer.Option("--subject")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Record a reply: in one transaction the lead's state moves and its queued steps stop."""
    from replyguard.domain.states import ReplyKind
    from replyguard.service_layer.leads import LeadNotFound, find_lead
    from replyguard.service_layer.replies import IncomingReply, record_reply

    try:
        reply_kind = ReplyKind(kind)
    except ValueError:
        fail(f"--kind must be one of {', '.join(k.value for k in ReplyKind)}", code=2)
    return_date = None
    if until:
        try:
            return_date = date.fromisoformat(until)
        except ValueError:
            fail(f"--until must be a date like 2026-12-24, got {until!r}", code=2)
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            lead_row = find_lead(uow, lead, product)
            outcome = record_reply(
                uow,
                lead_row.id,
                IncomingReply(
                    kind=reply_kind,
                    received_at=instance.clock.now(),
                    return_date=return_date,
                    text=text,
                    subject=subject,
                    from_address=lead.lower(),
                    source="cli",
                ),
                instance.settings,
                instance.failpoints,
            )
            uow.commit()
    except LeadNotFound as exc:
        fail(str(exc))
    result = {
        "reply_id": outcome.reply_id,
        "lead_state": outcome.lead_state,
        "cancelled_steps": outcome.cancelled,
        "rescheduled_steps": outcome.rescheduled,
        "in_flight": outcome.in_flight,
        "crossed": outcome.crossed,
        "notice_id": outcome.notice_id,
        "other_products": outcome.other_products,
    }
    if as_json:
        emit_json(result)
    else:
        out.print(
            f"{lead} in {product}: now {outcome.lead_state}; {outcome.cancelled} queued steps cancelled, "
            f"{outcome.rescheduled} moved after the pause"
        )
        for other in outcome.other_products:
            out.print(
                f"  also a lead of {other['product']} ({other['reply_state']}): not changed — decide there"
            )


@app.command()
def ingest(
    ctx: typer.Context,
    paths: Annotated[
        list[str], typer.Argument(help=".eml files, mbox files, Maildir folders, or - for stdin")
    ],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Store, classify and match inbound mail; each reply takes effect in one transaction."""
    from replyguard.adapters.mail_files import MailSourceError, iter_messages, total_size
    from replyguard.service_layer.ingest import ingest_raw

    instance = open_app(ctx)
    counts: dict[str, int] = {}
    results = []
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("ingesting", total=total_size(paths) or None)
            for item in iter_messages(paths, sys.stdin.buffer, lambda n: progress.advance(task, n)):
                result = ingest_raw(instance, item.raw, source="file")
                status = "duplicate" if result.duplicate else result.status
                counts[status] = counts.get(status, 0) + 1
                if as_json:  # kept only for the JSON report: a plain run stays flat in memory
                    results.append(
                        {
                            "origin": item.origin,
                            "inbound_id": result.inbound_id,
                            "status": status,
                            "kind": result.kind,
                            "lead_ids": list(result.lead_ids),
                            "detail": result.detail,
                        }
                    )
                if result.status == "unparsable" and not result.duplicate:
                    err.print(
                        f"[yellow]{item.origin}:[/] kept but not parsed: {result.detail}", highlight=False
                    )
    except MailSourceError as exc:
        fail(str(exc), code=2)
    if as_json:
        emit_json({"counts": counts, "messages": results})
    else:
        out.print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no messages")


@inbound_app.command("list")
def inbound_list(
    ctx: typer.Context,
    status: Annotated[
        str, typer.Option("--status", help="unmatched, probable, unparsable, matched")
    ] = "unmatched",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Inbound messages kept for a person: unmatched, probable matches, unparsable."""
    from sqlalchemy import select

    from replyguard.adapters.db import models as m

    instance = open_app(ctx)
    with instance.uow() as uow:
        rows = uow.session.execute(
            select(
                m.InboundMessage.id,
                m.InboundMessage.received_at,
                m.InboundMessage.kind,
                m.InboundMessage.message_id,
                m.InboundMessage.error,
                m.InboundMessage.source,
            )
            .where(m.InboundMessage.workspace_id == uow.workspace_id, m.InboundMessage.status == status)
            .order_by(m.InboundMessage.id)
        ).all()
    items = [
        {
            "id": r.id,
            "received_at": r.received_at.isoformat(),
            "kind": r.kind,
            "message_id": r.message_id,
            "error": r.error,
            "source": r.source,
        }
        for r in rows
    ]
    if as_json:
        emit_json(items)
        return
    table = Table(title=f"inbound: {status}")
    for column in ("id", "received", "kind", "message-id", "error"):
        table.add_column(column)
    for item in items:
        table.add_row(
            str(item["id"]),
            item["received_at"],
            item["kind"] or "-",
            item["message_id"] or "-",
            item["error"] or "",
        )
    out.print(table)


@app.command("inspect")
def inspect(file: Path, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Classify one email file (or - for stdin) without touching any database."""
    from replyguard.entrypoints.cli.inspect_cmd import inspect_command

    raise typer.Exit(inspect_command(file, as_json))


@app.command()
def demo(
    ctx: typer.Context,
    examples: Annotated[Path, typer.Option("--examples", help="Folder with campaign and lead files.")] = Path(
        "examples"
    ),
    outbox: Annotated[Path, typer.Option("--outbox", help="Maildir the demo sends into.")] = Path(
        "demo-outbox"
    ),
) -> None:
    """Build a demo workspace from examples/ and watch a reply stop its queue."""
    from replyguard.entrypoints.cli.demo import run_demo

    options = opts(ctx)
    raise typer.Exit(run_demo(options.db or "sqlite:///demo.db", examples, outbox, out))


from replyguard.entrypoints.cli import (  # noqa: E402
    campaign_cmd,
    enroll_cmd,
    listen_cmd,
    mailbox_cmd,
    poll_cmd,
    serve_cmd,
    steps_cmd,
)

serve_cmd.register(app)
listen_cmd.register(app)
poll_cmd.register(app)
campaign_cmd.register(app)
mailbox_cmd.register(app)
enroll_cmd.register(app)
steps_cmd.register(app)


def main() -> None:
    app()
