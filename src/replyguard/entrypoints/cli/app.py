"""`replyguard` command line: thin commands over the service layer.

Global options (each with an environment variable, shown by `--help`): `--db URL`, `--now
ISO-8601` (a simulated clock), `--workspace NAME`, `--transport SPEC`, `--debug`. How failures
are reported and the exit codes: `entrypoints/cli/errors.py`.

Start-up matters for a tool people type: this module imports only Typer and Rich. SQLAlchemy,
Alembic and the rest load inside the commands that use them (`replyguard --help` stays fast).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from replyguard import __version__
from replyguard.entrypoints.cli import errors

if TYPE_CHECKING:
    from replyguard.bootstrap import App

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Outbound sequences that stop when a person answers.",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
leads_app = typer.Typer(no_args_is_help=True, help="Import, show, stop and resume leads.")
reply_app = typer.Typer(no_args_is_help=True, help="Record replies by hand.")
app.add_typer(leads_app, name="leads")
app.add_typer(reply_app, name="reply")

# Markup off by default: names, subjects and reply text are user data, and a "[/]" in them
# must print as it is. A styled line asks for it (markup=True, its values escaped); a styled
# table cell is a `Text.from_markup(...)`.
out = Console(markup=False, highlight=False)
err = Console(stderr=True, markup=False, highlight=False)


@dataclass
class Options:
    db: str | None
    now: str | None
    workspace: str | None
    transport: str | None

    def app(self, *, running_clock: bool = False) -> App:
        from replyguard.bootstrap import bootstrap

        try:
            return bootstrap(
                self.db,
                now=self.now,
                running_clock=running_clock,
                transport=self.transport,
                workspace=self.workspace,
            )
        except ValueError as exc:
            fail(str(exc), code=errors.EXIT_USAGE)


def fail(message: str, code: int = errors.EXIT_PROBLEM) -> NoReturn:
    """One line on stderr, then exit: how every command reports a user error."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


def warn(where: str, message: str) -> None:
    """A problem that does not stop the command (a skipped row, a kept message)."""
    err.print(f"[yellow]{escape(where)}[/] {escape(message)}", markup=True, soft_wrap=True)


def opts(ctx: typer.Context) -> Options:
    value = ctx.obj
    assert isinstance(value, Options)
    return value


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"replyguard {__version__}\n")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="URL",
            help="Database: sqlite:///PATH or postgresql://user@host/db "
            "(env REPLYGUARD_DATABASE_URL; default sqlite:///replyguard.db)",
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            metavar="ISO-8601",
            help="Simulated current time for trials and tests, e.g. 2026-12-07T09:00:00+00:00 "
            "(env REPLYGUARD_NOW; default the real clock)",
        ),
    ] = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", metavar="NAME", help="Workspace (env REPLYGUARD_WORKSPACE; default default)"
        ),
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            "--transport",
            metavar="SPEC",
            help="Where emails go: maildir:PATH, smtp://user:pass@host:587, smtps://...:465 "
            "(env REPLYGUARD_TRANSPORT; default maildir:outbox)",
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show the full traceback of an error (env REPLYGUARD_DEBUG=1)"),
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    ctx.obj = Options(db, now, workspace, transport)


def open_app(ctx: typer.Context, *, running_clock: bool = False) -> App:
    from replyguard.bootstrap import WorkspaceMissing

    instance = opts(ctx).app(running_clock=running_clock)
    # The command's context owns the app: its engine and transport are closed when the command
    # ends, however it ends (an SQLite file is checkpointed only when its last connection closes).
    ctx.call_on_close(instance.close)
    try:
        _ = instance.workspace_id
    except WorkspaceMissing as exc:
        fail(str(exc))
    return instance


@app.command()
def init(ctx: typer.Context) -> None:
    """Create or migrate the database and the workspace."""
    instance = opts(ctx).app()
    ctx.call_on_close(instance.close)
    workspace_id = instance.init_database()
    out.print(
        f"database ready; workspace [bold]{escape(instance.workspace)}[/] (id {workspace_id})", markup=True
    )


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
        warn(f"{file}:{problem.line}:", problem.message)
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
    table = Table(title=escape(f"{summary['name']} <{summary['email']}>"))
    for column in ("product", "state", "queued", "sent", "cancelled", "next due"):
        table.add_column(column)
    for p in summary["products"]:
        s = p["steps"]
        table.add_row(
            escape(p["product"]),
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
    from replyguard.service_layer.leads import LeadNotFound, find_lead
    from replyguard.service_layer.replan import revive_and_replan

    instance = open_app(ctx)
    planned = []
    try:
        with instance.uow() as uow:
            before = set_lead_state(uow, email, product, ReplyState(target), why=why)
            if target == ReplyState.ACTIVE:
                # A person's resume brings back what a reply cancelled before it ever left.
                planned = revive_and_replan(uow, find_lead(uow, email, product).id, uow.clock.now())
            uow.commit()
    except (LeadNotFound, IllegalTransition) as exc:
        fail(str(exc))
    out.print(escape(f"{email} in {product}: {before} -> {target}"))
    for step in planned:
        out.print(
            escape(f"  step {step.position} of {step.campaign}: '{step.subject}'")
            + f" at {step.due_at:%a %d %b %H:%M} UTC"
        )


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
            escape(f"{lead} in {product}: now {outcome.lead_state}; ")
            + f"{outcome.cancelled} queued steps cancelled, {outcome.rescheduled} moved after the pause"
        )
        for other in outcome.other_products:
            out.print(
                escape(f"  also a lead of {other['product']} ({other['reply_state']}): ")
                + "not changed — decide there"
            )


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
    inbound_cmd,
    inspect_cmd,
    listen_cmd,
    mailbox_cmd,
    poll_cmd,
    senders_cmd,
    serve_cmd,
    steps_cmd,
    tokens_cmd,
    up_cmd,
    users_cmd,
)

inspect_cmd.register(app)

serve_cmd.register(app)
listen_cmd.register(app)
poll_cmd.register(app)
senders_cmd.register(app)
inbound_cmd.register(app)
campaign_cmd.register(app)
mailbox_cmd.register(app)
enroll_cmd.register(app)
steps_cmd.register(app)

from replyguard.entrypoints.cli import notify_cmd, threads_cmd  # noqa: E402

threads_cmd.register(app)
notify_cmd.register(app)
users_cmd.register(app)
tokens_cmd.register(app)
up_cmd.register(app)

from replyguard.entrypoints.cli import audit_cmd  # noqa: E402

audit_cmd.register(app)


def main(argv: list[str] | None = None) -> None:
    """The `replyguard` script. Every failure becomes one line and an exit code (errors.py)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        app(args=args, prog_name="replyguard")
    except (Exception, KeyboardInterrupt) as exc:
        if errors.debug_requested(args):
            raise
        sys.exit(errors.report(exc))
