"""`replyguard senders list|confirm|reject`: a person's decision on a sender we could not tie
to a lead (a stranger in her thread, or her address failing authentication)."""

from typing import Annotated

import typer

from replyguard.entrypoints.cli.options import AsJson, ListJson

senders_app = typer.Typer(help="Senders waiting for a person: confirm or reject them.", no_args_is_help=True)

ConfirmationId = Annotated[int, typer.Argument(help="The id `senders list` shows.")]
By = Annotated[str, typer.Option("--by", help="Who decides (recorded on the timeline).")]


def register(app: typer.Typer) -> None:
    app.add_typer(senders_app, name="senders")


@senders_app.command("list")
def senders_list(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Pending confirmations: who wrote, for which lead, and what waits on the decision."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.inbound.confirmations import pending_confirmations

    instance = open_app(ctx)
    with instance.uow() as uow:
        items = pending_confirmations(uow)
    if as_json:
        emit_json(items)
        return
    for item in items:
        asks = [k for k in ("learn_address", "unsubscribe") if item[k]] + [item["held_effect"] or ""]
        asks = [a for a in asks if a]
        out.print(
            f"{item['id']}: {item['sender']} for lead {item['lead_id']} ({item['why']}): {', '.join(asks)}"
        )
    if not items:
        out.print("no sender waits for a decision")


@senders_app.command("confirm")
def senders_confirm(
    ctx: typer.Context, confirmation: ConfirmationId, by: By, as_json: AsJson = False
) -> None:
    """The message is genuine: learn the address, apply the unsubscribe, bounce or pause that waits."""
    _decide(ctx, confirmation, by, "confirm", as_json)


@senders_app.command("reject")
def senders_reject(ctx: typer.Context, confirmation: ConfirmationId, by: By, as_json: AsJson = False) -> None:
    """The sender does not speak for the lead: nothing is learned or unsubscribed."""
    _decide(ctx, confirmation, by, "reject", as_json)


def _decide(ctx: typer.Context, confirmation: int, by: str, what: str, as_json: bool) -> None:
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.inbound.confirmations import (
        ConfirmationNotFound,
        confirm_sender,
        confirmation_view,
        reject_sender,
    )

    instance = open_app(ctx)
    lead_state = None
    try:
        with instance.uow() as uow:
            if what == "confirm":
                outcome = confirm_sender(uow, confirmation, instance.settings, by=by, hooks=instance.hooks)
                lead_state = outcome.lead_state if outcome is not None else None
            else:
                reject_sender(uow, confirmation, by=by)
            view = confirmation_view(uow, confirmation)
            uow.commit()
    except ConfirmationNotFound as exc:
        fail(str(exc))
    if as_json:
        emit_json({"confirmation": view, "lead_state": lead_state})
        return
    out.print(f"sender confirmation {confirmation}: {view['state']}")
