"""`replyguard audit`: prove on a live campaign that a reply stops it (docs/audit.md).

    replyguard audit --campaign NAME [--canary EMAIL] [--json]   the six checks, with a canary
    replyguard audit --config [--campaign NAME] [--json]         setups that fail in production
    replyguard audit history [--campaign NAME] [--json]          the recorded runs
    replyguard audit show RUN [--json]                           one run, as it was printed

Exit codes: 0 every check passed; 1 a check failed, or the audit could not run (the output says
which); 2 a wrong option or configuration value.

No `from __future__ import annotations`: Typer would compile and evaluate the commands' string
annotations on every start (app.py says why); names for type checking only are quoted.
"""

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out

if TYPE_CHECKING:
    from replyguard.bootstrap import App
    from replyguard.service_layer.audit.run import AuditReport

_STYLE = {"pass": "[bold green]PASS[/]", "fail": "[bold red]FAIL[/]", "warn": "[bold yellow]WARN[/]"}


def register(app: typer.Typer) -> None:
    audit_app = typer.Typer(
        help="Prove on a live campaign that a reply stops it: six checks (reply state, queued "
        "steps cancelled, the send-time re-check, retries, the owner's notice, an out-of-office pause).",
        invoke_without_command=True,
    )
    audit_app.callback(invoke_without_command=True)(audit)
    audit_app.command("history")(history)
    audit_app.command("show")(show)
    app.add_typer(audit_app, name="audit")


def audit(
    ctx: typer.Context,
    campaign: Annotated[str | None, typer.Option("--campaign", help="The live campaign to audit.")] = None,
    canary: Annotated[
        str | None,
        typer.Option("--canary", help="An address the team owns (default: the campaign file's canary)."),
    ] = None,
    config: Annotated[
        bool, typer.Option("--config", help="Check the setup instead: inbound, pollers, notices, URLs.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Run the six checks on a campaign with a canary lead; exit 1 if any fails."""
    if ctx.invoked_subcommand is not None:
        return
    if config:
        report = _config(ctx, campaign)
    elif campaign is None:
        fail("give --campaign NAME (or --config); see replyguard audit --help", code=2)
    else:
        report = _campaign(ctx, campaign, canary)
    _print(report, as_json)
    raise typer.Exit(0 if report.passed else 1)


def _campaign(ctx: typer.Context, campaign: str, canary: str | None) -> "AuditReport":
    from replyguard.service_layer.audit.run import run_audit

    instance = open_app(ctx)
    try:
        _ = instance.transport
    except ValueError as exc:
        fail(str(exc), code=2)
    try:
        return run_audit(instance, campaign, canary=canary, channels=_channels(instance))
    except LookupError as exc:
        fail(str(exc))
    finally:
        instance.close()


def _channels(instance: "App") -> list[str]:
    from replyguard.service_layer.audit.run import channel_names

    return channel_names(instance.notify)


def _config(ctx: typer.Context, campaign: str | None) -> "AuditReport":
    from replyguard.service_layer.audit.config import Setup
    from replyguard.service_layer.audit.run import config_audit

    # Notice settings that do not parse stop the command at start-up, as every setting does.
    instance = open_app(ctx)
    setup = Setup(instance.settings, instance.notify, None, instance.transport_spec)
    try:
        return config_audit(instance, setup, campaign=campaign)
    except LookupError as exc:
        fail(str(exc))
    finally:
        instance.close()


def history(
    ctx: typer.Context,
    campaign: Annotated[str | None, typer.Option("--campaign", help="Only this campaign's runs.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="How many runs.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON on stdout.")] = False,
) -> None:
    """The recorded audit runs, newest first."""
    from replyguard.service_layer.audit.run import audit_history
    from replyguard.service_layer.workspace.campaigns import find_campaign

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            if campaign is not None:
                find_campaign(uow, campaign)  # a typo must not look like a campaign never audited
            runs = audit_history(uow, campaign=campaign, limit=limit)
    except LookupError as exc:
        fail(str(exc))
    finally:
        instance.close()
    if as_json:
        emit_json(runs)
        return
    table = Table(title="audit history")
    for column in ("run", "started", "kind", "campaign", "canary", "status", "failed"):
        table.add_column(column, overflow="fold")
    for run in runs:
        style = _STYLE.get({"passed": "pass", "failed": "fail"}.get(run["status"], ""))
        status = Text.from_markup(style) if style else Text(run["status"])
        table.add_row(
            str(run["run_id"]),
            run["started_at"][:19].replace("T", " "),
            run["kind"],
            run["campaign"] or "-",
            run["canary"] or "-",
            status,
            ", ".join(run["failed"]) or run["error"] or "-",
        )
    out.print(table)


def show(
    ctx: typer.Context,
    run: Annotated[int, typer.Argument(help="The run's id (`audit history` shows them).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON on stdout.")] = False,
) -> None:
    """One recorded run with every row and its evidence."""
    from replyguard.service_layer.audit.run import audit_run

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            report = audit_run(uow, run)
    except LookupError as exc:
        fail(str(exc))
    finally:
        instance.close()
    _print(report, as_json)


def _print(report: "AuditReport", as_json: bool) -> None:
    if as_json:
        emit_json(report.to_json())
        return
    what = (
        f"campaign {report.campaign}"
        if report.kind == "campaign"
        else f"setup of {report.campaign or 'the workspace'}"
    )
    canary = f", canary {report.canary}" if report.canary else ""
    table = Table(title=f"audit run {report.run_id}: {what}{canary}", show_lines=True)
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("evidence", overflow="fold")
    for row in report.rows:
        lines = [f"[bold]{escape(row.summary)}[/]", *(escape(d) for d in row.details)]
        table.add_row(
            row.title, Text.from_markup(_STYLE[row.status.value]), Text.from_markup("\n".join(lines))
        )
    if report.rows:
        out.print(table)
    if report.error:
        out.print(f"[bold red]the audit could not run:[/] {escape(report.error)}", markup=True)
    emails: list[dict[str, Any]] = report.emails
    if emails:
        targets = ", ".join(sorted({e["to"] for e in emails}))
        out.print(f"emails handed to the transport: {len(emails)}, to {targets}")
    verdict = {"passed": "[bold green]passed[/]", "failed": "[bold red]FAILED[/]"}.get(
        report.status, report.status
    )
    out.print(f"audit run {report.run_id}: {verdict}", markup=True)
