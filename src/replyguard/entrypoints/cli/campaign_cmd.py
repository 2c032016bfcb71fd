"""`replyguard campaign create|update|pause|resume|archive|list`: campaigns from their TOML
files, and their status.

`create` refuses a file whose mailbox settings differ from the mailbox's (they belong to the
mailbox: `replyguard mailbox set`) and tries every template on a sample lead first. `update`
shows what changes and what that does to queued emails, asks, then applies it in one
transaction (`--yes` skips the question); emails already sent are never rewritten.
"""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from replyguard.entrypoints.cli.options import AsJson, ListJson

CampaignFile = Annotated[Path, typer.Argument(help="The campaign's TOML file (see examples/campaign.toml).")]

campaign_app = typer.Typer(no_args_is_help=True, help="Create, change and list campaigns.")


def register(app: typer.Typer) -> None:
    """Add the `campaign` commands to the CLI."""
    app.add_typer(campaign_app, name="campaign")


def read_text(file: Path) -> str:
    from replyguard.entrypoints.cli.app import fail

    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{file}: no such file", code=2)
    except UnicodeDecodeError as exc:
        fail(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})", code=2)


@campaign_app.command("create")
def campaign_create(ctx: typer.Context, file: CampaignFile, as_json: AsJson = False) -> None:
    """Create a campaign from a TOML file (see examples/campaign.toml)."""
    from dataclasses import asdict

    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.workspace.campaigns import check_campaign_file, create_campaign

    source = read_text(file)
    instance = open_app(ctx)
    try:
        # Every template is trial-rendered here, with no transaction open (issue 21).
        checked = check_campaign_file(lambda: instance.scoped.read(instance.workspace_id), source)
        with instance.uow() as uow:
            result = create_campaign(uow, checked)
            uow.commit()
    except CampaignSpecError as exc:
        fail(f"{file}: {exc}", code=2)
    if as_json:
        emit_json(asdict(result))
        return
    verb = "created" if result.created else "already exists (identical)"
    out.print(
        f"campaign [bold]{escape(result.name)}[/] for {escape(result.product)}: {result.steps} steps, {verb}",
        markup=True,
    )
    out.print(
        f"  sends as {result.from_name} <{result.mailbox}>, at most {result.daily_cap} a day"
        f" (days counted in {result.cap_timezone})",
        highlight=False,
    )


@campaign_app.command("update")
def campaign_update(
    ctx: typer.Context,
    file: CampaignFile,
    yes: Annotated[bool, typer.Option("--yes", help="Apply without asking.")] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the result as one JSON object on stdout; the differences and the "
            "question go to stderr.",
        ),
    ] = False,
) -> None:
    """Change a campaign from its edited TOML file: shows the differences, then asks."""
    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app, out
    from replyguard.service_layer.workspace.campaign_changes import apply_update, plan_update
    from replyguard.service_layer.workspace.campaigns import check_campaign_file

    # With --json, stdout holds the JSON alone: what a person reads goes to stderr.
    shown = err if as_json else out
    instance = open_app(ctx)
    try:
        source = check_campaign_file(lambda: instance.scoped.read(instance.workspace_id), read_text(file))
        with instance.scoped.read(instance.workspace_id) as uow:
            plan = plan_update(uow, source)
        if not plan.changes:
            if as_json:
                emit_json({"campaign": plan.name, "changes": [], "notes": [], "applied": False})
                return
            out.print(f"campaign [bold]{escape(plan.name)}[/]: nothing to change", markup=True)
            return
        shown.print(f"campaign [bold]{escape(plan.name)}[/]: {len(plan.changes)} change(s)", markup=True)
        for change in plan.changes:
            shown.print(f"  {change.line()}", highlight=False, markup=False)
        for note in plan.notes:
            shown.print(f"  - {note}", highlight=False, markup=False)
        if not yes and not _confirm("Apply these changes?", on_stderr=as_json):
            fail("nothing changed")
        with instance.uow() as uow:
            done = apply_update(uow, source, shown=plan.changes)
            uow.commit()
    except (CampaignSpecError, LookupError) as exc:
        fail(f"{file}: {exc}", code=2)
    if as_json:
        emit_json(
            {
                "campaign": done.name,
                "changes": [{"what": c.what, "before": c.before, "after": c.after} for c in done.changes],
                "notes": done.notes,
                "applied": True,
                "rendered_again": done.rendered_again,
            }
        )
        return
    out.print(
        f"campaign [bold]{escape(done.name)}[/] updated; {done.rendered_again} queued emails rendered again",
        markup=True,
    )


def _confirm(question: str, *, on_stderr: bool) -> bool:
    """Ask yes or no. On stderr for --json: Click's own prompt writes to stdout even then."""
    if not on_stderr:
        return typer.confirm(question, default=False)
    import sys

    from replyguard.entrypoints.cli.app import err

    err.print(f"{question} [y/N]: ", end="")
    answer = sys.stdin.readline()
    if not answer:
        raise typer.Abort()
    return answer.strip().lower() in ("y", "yes")


CampaignName = Annotated[str, typer.Argument(help="The campaign's name (`campaign list` shows them).")]


def _set_status(ctx: typer.Context, name: str, action: str) -> None:
    from replyguard.domain.states import IllegalTransition
    from replyguard.entrypoints.cli.app import fail, open_app, out
    from replyguard.service_layer.workspace.campaign_status import set_campaign_status
    from replyguard.service_layer.workspace.campaigns import find_campaign
    from replyguard.settings import acting_user

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            done = set_campaign_status(uow, find_campaign(uow, name).id, action, by=acting_user())
            uow.commit()
    except LookupError as exc:
        fail(str(exc), code=2)
    except IllegalTransition as exc:
        fail(f"campaign {name!r}: {exc}")
    cancelled = f"; {done.cancelled} queued emails cancelled" if action == "archive" else ""
    out.print(f"campaign [bold]{escape(done.name)}[/] {done.status}{cancelled}", markup=True)


@campaign_app.command("pause")
def campaign_pause(ctx: typer.Context, name: CampaignName) -> None:
    """Pause a campaign: nothing of it is sent until `campaign resume` (queued emails wait)."""
    _set_status(ctx, name, "pause")


@campaign_app.command("resume")
def campaign_resume(ctx: typer.Context, name: CampaignName) -> None:
    """Resume a paused campaign: its queued emails go out in the send window."""
    _set_status(ctx, name, "resume")


@campaign_app.command("archive")
def campaign_archive(
    ctx: typer.Context,
    name: CampaignName,
    yes: Annotated[bool, typer.Option("--yes", help="Archive without asking.")] = False,
) -> None:
    """Archive a campaign for good: its queued emails are cancelled; no new leads, no changes."""
    from replyguard.entrypoints.cli.app import fail

    if not yes and not _confirm(f"Archive {name!r} and cancel its queued emails for good?", on_stderr=False):
        fail("nothing changed")
    _set_status(ctx, name, "archive")


@campaign_app.command("list")
def campaign_list(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Every campaign with its mailbox, settings and how far its leads are."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.workspace.campaigns import list_campaigns

    instance = open_app(ctx)
    with instance.uow() as uow:
        campaigns = list_campaigns(uow)
    if as_json:
        emit_json(campaigns)
        return
    table = Table(title="campaigns")
    for column in ("name", "product", "mailbox", "cap/day", "window", "steps", "enrolled", "queued"):
        table.add_column(column)
    for c in campaigns:
        window = c["window"]
        queued = sum(c["step_states"].get(s, 0) for s in ("scheduled", "awaiting_approval", "claimed"))
        paused = " (paused)" if c["mailbox_status"] != "active" else ""
        table.add_row(
            c["name"] if c["status"] == "active" else f"{c['name']} ({c['status']})",
            c["product"],
            f"{c['mailbox']}{paused}",
            str(c["daily_cap"]),
            f"{','.join(window['days'])} {window['start']}-{window['end']} {c['timezone']}",
            str(c["steps"]),
            str(sum(c["enrollments"].values())),
            str(queued),
        )
    out.print(table)
