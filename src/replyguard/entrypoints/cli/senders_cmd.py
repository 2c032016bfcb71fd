"""`replyguard senders list|confirm|reject`: a person's decision on a sender we could not tie
to a lead (a stranger in her thread, or her address failing authentication)."""

from __future__ import annotations

from typing import Annotated

import typer

senders_app = typer.Typer(help="Senders waiting for a person: confirm or reject them.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(senders_app, name="senders")


@senders_app.command("list")
def senders_list(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Pending confirmations: who wrote, for which lead, and what waits on the decision."""
    from sqlalchemy import select

    from replyguard.adapters.db import models as m
    from replyguard.entrypoints.cli.app import emit_json, open_app, out

    instance = open_app(ctx)
    c = m.SenderConfirmation
    with instance.uow() as uow:
        rows = uow.session.execute(
            select(c.id, c.lead_id, c.sender, c.learn_address, c.unsubscribe, c.reason, c.created_at)
            .where(c.workspace_id == uow.workspace_id, c.state == "pending")
            .order_by(c.id)
        ).all()
    items = [
        {
            "id": r.id,
            "lead_id": r.lead_id,
            "sender": r.sender,
            "learn_address": r.learn_address,
            "unsubscribe": r.unsubscribe,
            "why": r.reason,
            "created_at": r.created_at.isoformat(),
        }
        for r in rows
    ]
    if as_json:
        emit_json(items)
        return
    for item in items:
        asks = [k for k in ("learn_address", "unsubscribe") if item[k]]
        out.print(
            f"{item['id']}: {item['sender']} for lead {item['lead_id']} ({item['why']}): {', '.join(asks)}"
        )
    if not items:
        out.print("no sender waits for a decision")


@senders_app.command("confirm")
def senders_confirm(
    ctx: typer.Context,
    confirmation: Annotated[int, typer.Argument(help="The id `senders list` shows.")],
    by: Annotated[str, typer.Option("--by", help="Who decides (recorded on the timeline).")],
) -> None:
    """The sender speaks for the lead: learn the address, apply the unsubscribe if one waits."""
    from replyguard.entrypoints.cli.app import fail, open_app, out
    from replyguard.service_layer.confirmations import ConfirmationNotFound, confirm_sender

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            confirm_sender(uow, confirmation, instance.settings, by=by, failpoints=instance.failpoints)
            uow.commit()
    except ConfirmationNotFound as exc:
        fail(str(exc))
    out.print(f"sender confirmation {confirmation}: confirmed")


@senders_app.command("reject")
def senders_reject(
    ctx: typer.Context,
    confirmation: Annotated[int, typer.Argument(help="The id `senders list` shows.")],
    by: Annotated[str, typer.Option("--by", help="Who decides (recorded on the timeline).")],
) -> None:
    """The sender does not speak for the lead: nothing is learned or unsubscribed."""
    from replyguard.entrypoints.cli.app import fail, open_app, out
    from replyguard.service_layer.confirmations import ConfirmationNotFound, reject_sender

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            reject_sender(uow, confirmation, by=by)
            uow.commit()
    except ConfirmationNotFound as exc:
        fail(str(exc))
    out.print(f"sender confirmation {confirmation}: rejected")
