"""`replyguard leads import|list|show|stop|resume` and `replyguard products list`.

A lead belongs to a product that exists: `campaign create` creates a campaign's product, and
`leads import` refuses a name it does not know (listing the known ones) unless told
`--create-product`, so that a typo cannot put leads where no campaign will ever enroll them.
"""

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from replyguard.entrypoints.cli.options import AsJson, ListJson, ShowJson

leads_app = typer.Typer(no_args_is_help=True, help="Import, list, show, stop and resume leads.")
products_app = typer.Typer(no_args_is_help=True, help="Products: what leads and campaigns belong to.")

_QUEUED = ("scheduled", "awaiting_approval", "claimed")

Product = Annotated[str, typer.Option("--product", help="The product the lead belongs to.")]
Why = Annotated[str, typer.Option("--why", help="Why (recorded on the lead's timeline).")]


def register(app: typer.Typer) -> None:
    """Add the `leads` and `products` commands to the CLI."""
    app.add_typer(leads_app, name="leads")
    app.add_typer(products_app, name="products")


@leads_app.command("import")
def leads_import(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A CSV file with an email column (see examples/leads.csv).")],
    product: Annotated[
        str, typer.Option("--product", help="The product these leads belong to; it must exist.")
    ],
    create_product: Annotated[
        bool, typer.Option("--create-product", help="Create the product if there is none of that name.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Import contacts from a CSV file as leads of a product. Re-importing updates."""
    from replyguard.domain.leads_csv import LeadFileError, read_leads
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out, progress_bar, warn
    from replyguard.service_layer.queries.products import ProductNotFound, require_product
    from replyguard.service_layer.workspace.bulk import import_in_chunks

    try:
        rows = list(read_leads(file.read_bytes()))
    except FileNotFoundError:
        fail(f"{file}: no such file", code=2)
    except LeadFileError as exc:
        fail(f"{file}: {exc}", code=2)
    instance = open_app(ctx)
    if not create_product:
        try:
            with instance.uow() as uow:
                require_product(uow, product)
        except ProductNotFound as exc:
            fail(f"{exc}: check the name, or pass --create-product to create it")
    with progress_bar() as progress:
        task = progress.add_task(f"importing {file.name}", total=len(rows))
        report = import_in_chunks(instance.uow, product, rows, lambda n: progress.advance(task, n))
    for problem in report.errors:
        warn(f"{file}:{problem.line}:", problem.message)
    if as_json:
        emit_json(
            {
                "product": product,
                "created": report.created,
                "updated": report.updated,
                "skipped": len(report.errors),
                "errors": [{"line": e.line, "message": e.message} for e in report.errors],
            }
        )
    else:
        out.print(f"{report.created} created, {report.updated} updated, {len(report.errors)} rows skipped")
    if report.errors:
        raise typer.Exit(1)


@leads_app.command("list")
def leads_list(
    ctx: typer.Context,
    product: Annotated[str | None, typer.Option("--product", help="Only the leads of this product.")] = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help="Only leads in this reply state: active, replied, out_of_office, held, bounced, "
            "unsubscribed or stopped.",
        ),
    ] = None,
    as_json: ListJson = False,
    as_csv: Annotated[
        bool,
        typer.Option("--csv", help="Print a CSV file (formula-safe for spreadsheets) instead of a table."),
    ] = False,
) -> None:
    """Every lead (of a product, in a state) with its reply state and its steps."""
    from replyguard.domain.states import ReplyState
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.queries.leads import list_leads
    from replyguard.service_layer.queries.products import ProductNotFound

    if state is not None and state not in set(ReplyState):
        fail(f"--state must be one of {', '.join(ReplyState)}, got {state!r}", code=2)
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            leads = list_leads(uow, product=product, state=state)
    except ProductNotFound as exc:
        fail(str(exc))
    if as_json:
        emit_json([asdict(lead) for lead in leads])
        return
    if as_csv:
        from replyguard.domain.leads_csv import write_csv
        from replyguard.service_layer.queries.leads import EXPORT_HEADER, export_rows

        sys.stdout.write(write_csv(EXPORT_HEADER, export_rows(leads)))
        return
    table = Table(title="leads")
    for column in ("email", "name", "company", "product", "state", "since", "queued", "sent"):
        table.add_column(column)
    for lead in leads:
        table.add_row(
            lead.email,
            lead.name,
            lead.company,
            lead.product,
            lead.reply_state,
            f"{lead.reply_state_updated_at:%Y-%m-%d %H:%M}",
            str(sum(lead.steps.get(s, 0) for s in _QUEUED)),
            str(lead.steps.get("sent", 0)),
        )
    out.print(table)


@leads_app.command("show")
def leads_show(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="Any address of the contact.")],
    as_json: ShowJson = False,
) -> None:
    """A contact and, per product, its reply state, step counts and next due time."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.workspace.leads import LeadNotFound, lead_summary

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


def _person_move(ctx: typer.Context, email: str, product: str, target: str, why: str, as_json: bool) -> None:
    from replyguard.domain.states import IllegalTransition, ReplyState
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.rescue.actions import set_lead_state
    from replyguard.service_layer.rescue.replan import revive_and_replan
    from replyguard.service_layer.workspace.leads import LeadNotFound

    instance = open_app(ctx)
    planned = []
    try:
        with instance.uow() as uow:
            moved = set_lead_state(uow, email, product, ReplyState(target), why=why)
            if target == ReplyState.ACTIVE:
                # A person's resume brings back what a reply cancelled before it ever left.
                planned = revive_and_replan(uow, moved.lead_id, uow.clock.now())
            uow.commit()
    except (LeadNotFound, IllegalTransition) as exc:
        fail(str(exc))
    if as_json:
        emit_json(
            {
                "email": email,
                "product": product,
                "lead_id": moved.lead_id,
                "before": moved.before,
                "after": moved.after,
                "cancelled_steps": moved.cancelled,
                "in_flight": moved.in_flight,
                "planned": [step.to_json() for step in planned],
            }
        )
        return
    # Plain text (the console's markup is off): names and subjects print as they are.
    out.print(f"{email} in {product}: {moved.before} -> {moved.after}")
    for step in planned:
        out.print(
            f"  step {step.position} of {step.campaign}: '{step.subject}' at {step.due_at:%a %d %b %H:%M} UTC"
        )


Email = Annotated[str, typer.Argument(help="Any address of the lead's contact.")]


@leads_app.command("stop")
def leads_stop(
    ctx: typer.Context, email: Email, product: Product, why: Why = "", as_json: AsJson = False
) -> None:
    """Stop a lead: cancels its queued steps."""
    _person_move(ctx, email, product, "stopped", why, as_json)


@leads_app.command("resume")
def leads_resume(
    ctx: typer.Context, email: Email, product: Product, why: Why = "", as_json: AsJson = False
) -> None:
    """Return a lead to active (a person's decision; never automatic after a reply)."""
    _person_move(ctx, email, product, "active", why, as_json)


@products_app.command("list")
def products_list(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Every product with its campaigns and its leads by reply state."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.queries.products import list_products

    instance = open_app(ctx)
    with instance.uow() as uow:
        products = list_products(uow)
    if as_json:
        emit_json([asdict(p) for p in products])
        return
    table = Table(title="products")
    for column in ("name", "campaigns", "leads", "by state"):
        table.add_column(column)
    for p in products:
        states = ", ".join(f"{state} {count}" for state, count in p.lead_states.items())
        table.add_row(p.name, ", ".join(p.campaigns) or "-", str(p.leads), states or "-")
    out.print(table)
