"""`replyguard mailbox list|set|resume`: a mailbox's own settings, and lifting its pause.

A mailbox's sender name, daily cap and cap day are shared by every campaign that sends from
it; this is the one place to change them. A mailbox a server refused (a wrong password, a
refused sender, relaying denied) is paused by the worker; `resume` lifts that once fixed.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from replyguard.entrypoints.cli.options import AsJson, ListJson

Address = Annotated[str, typer.Argument(help="The mailbox's address (as in its campaigns' files).")]

mailbox_app = typer.Typer(no_args_is_help=True, help="Sending mailboxes: settings and pauses.")


def register(app: typer.Typer) -> None:
    """Add the `mailbox` commands to the CLI."""
    app.add_typer(mailbox_app, name="mailbox")


@mailbox_app.command("list")
def mailbox_list(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Every mailbox with its settings, status and campaigns."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.mailboxes import list_mailboxes

    instance = open_app(ctx)
    with instance.uow() as uow:
        mailboxes = list_mailboxes(uow)
    if as_json:
        emit_json(mailboxes)
        return
    table = Table(title="mailboxes")
    for column in ("address", "sender name", "cap/day", "cap day in", "status", "campaigns"):
        table.add_column(column)
    for mb in mailboxes:
        status = mb["status"] if mb["status"] == "active" else f"{mb['status']}: {mb['paused_reason']}"
        table.add_row(
            mb["address"],
            mb["from_name"],
            str(mb["daily_cap"]),
            mb["timezone"],
            status,
            ", ".join(mb["campaigns"]),
        )
    out.print(table)


@mailbox_app.command("set")
def mailbox_set(
    ctx: typer.Context,
    address: Address,
    from_name: Annotated[str | None, typer.Option("--from-name", help="The sender name.")] = None,
    daily_cap: Annotated[int | None, typer.Option("--daily-cap", help="Most emails a day.")] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="The zone whose days the cap counts.")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Change a mailbox's settings, for every campaign that sends from it."""
    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.domain.schedule import ScheduleError
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.mailboxes import MailboxSettings, set_mailbox

    if from_name is None and daily_cap is None and timezone is None:
        fail("nothing to set: give --from-name, --daily-cap or --timezone", code=2)
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            changes = set_mailbox(uow, address, MailboxSettings(from_name, daily_cap, timezone))
            uow.commit()
    except (LookupError, CampaignSpecError, ScheduleError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json(
            {
                "mailbox": address,
                "changes": {name: {"before": b, "after": a} for name, (b, a) in changes.items()},
            }
        )
        return
    if not changes:
        out.print(f"{address}: nothing changed")
    for name, (before, after) in changes.items():
        out.print(f"{address}: {name} {before} -> {after}", highlight=False)


@mailbox_app.command("resume")
def mailbox_resume(ctx: typer.Context, address: Address, as_json: AsJson = False) -> None:
    """Send from a paused mailbox again (after fixing what its server refused)."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.mailboxes import resume_mailbox

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            resumed = resume_mailbox(uow, address)
            uow.commit()
    except LookupError as exc:
        fail(str(exc))
    if as_json:
        emit_json({"mailbox": address, "resumed": resumed, "status": "active"})
        return
    out.print(f"{address}: {'sending again' if resumed else 'was not paused'}")
