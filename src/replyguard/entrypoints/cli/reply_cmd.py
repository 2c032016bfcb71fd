"""`replyguard reply record`: a reply recorded by hand, with the effect a real one has.

Options that cannot apply are refused rather than ignored: `--until` belongs to an
out-of-office, and a return date already past would pause nothing.
"""

from datetime import UTC, date
from typing import Annotated

import typer

from replyguard.entrypoints.cli.options import AsJson

reply_app = typer.Typer(no_args_is_help=True, help="Record replies by hand.")


def register(app: typer.Typer) -> None:
    """Add the `reply` commands to the CLI."""
    app.add_typer(reply_app, name="reply")


@reply_app.command("record")
def reply_record(
    ctx: typer.Context,
    lead: Annotated[str, typer.Option("--lead", help="The lead's email (any known address).")],
    product: Annotated[str, typer.Option("--product", help="The product the lead belongs to.")],
    kind: Annotated[
        str,
        typer.Option(
            "--kind",
            help="human_reply, out_of_office, auto_reply, bounce_hard, bounce_soft, unsubscribe",
        ),
    ] = "human_reply",
    until: Annotated[
        str | None,
        typer.Option("--until", help="Out-of-office only: the date they are back (YYYY-MM-DD, not past)."),
    ] = None,
    text: Annotated[str | None, typer.Option("--text", help="The reply's text, as they wrote it.")] = None,
    subject: Annotated[
        str | None,
        typer.Option("--subject", help="The reply's subject (default: Re: the last email sent to the lead)."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Record a reply: in one transaction the lead's state moves and its queued steps stop."""
    from replyguard.domain.states import ReplyKind
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
    from replyguard.service_layer.workspace.leads import LeadNotFound, answered_subject, find_lead

    try:
        reply_kind = ReplyKind(kind)
    except ValueError:
        fail(f"--kind must be one of {', '.join(k.value for k in ReplyKind)}", code=2)
    return_date = None
    if until is not None:
        if reply_kind is not ReplyKind.OUT_OF_OFFICE:
            fail(f"--until applies to --kind out_of_office only, not to {kind}", code=2)
        try:
            return_date = date.fromisoformat(until)
        except ValueError:
            fail(f"--until must be a date like 2026-12-24, got {until!r}", code=2)
    instance = open_app(ctx)
    today = instance.clock.now().astimezone(UTC).date()
    if return_date is not None and return_date < today:
        fail(f"--until {return_date} is in the past (today is {today}): give the day they are back", code=2)
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
                    subject=subject or answered_subject(uow, lead_row.id),
                    from_address=lead.lower(),
                    source="cli",
                ),
                instance.settings,
                instance.hooks,
            )
            uow.commit()
    except LeadNotFound as exc:
        fail(str(exc))
    if as_json:
        emit_json(
            {
                "reply_id": outcome.reply_id,
                "lead_state": outcome.lead_state,
                "cancelled_steps": outcome.cancelled,
                "rescheduled_steps": outcome.rescheduled,
                "in_flight": outcome.in_flight,
                "crossed": outcome.crossed,
                "notice_id": outcome.notice_id,
                "other_products": outcome.other_products,
            }
        )
        return
    # Plain text (the console's markup is off): names print as they are.
    out.print(
        f"{lead} in {product}: now {outcome.lead_state}; "
        f"{outcome.cancelled} queued steps cancelled, {outcome.rescheduled} moved after the pause"
    )
    for other in outcome.other_products:
        out.print(f"  also a lead of {other['product']} ({other['reply_state']}): not changed — decide there")
