"""`replyguard steps approve|resend|skip|failed`: a person's decisions about steps.

A step that failed for good holds its lead, and nothing of that sequence goes out until a
person decides: `resend` tries the same email again, `skip` goes on without it (the next
email then does not reply to it), or `replyguard leads stop` ends the sequence.
"""

from typing import Annotated

import typer
from rich.table import Table

from replyguard.entrypoints.cli.options import AsJson, ListJson

steps_app = typer.Typer(no_args_is_help=True, help="Approve, resend or skip steps that wait for a person.")


def register(app: typer.Typer) -> None:
    """Add the `steps` commands to the CLI."""
    app.add_typer(steps_app, name="steps")


Campaign = Annotated[str, typer.Option("--campaign", help="The campaign's name.")]
Lead = Annotated[str, typer.Option("--lead", help="The lead's email.")]
Position = Annotated[int | None, typer.Option("--step", help="Step position (1-based).")]


@steps_app.command("approve")
def steps_approve(
    ctx: typer.Context,
    campaign: Campaign,
    lead: Annotated[str | None, typer.Option("--lead", help="Only this lead's steps (its email).")] = None,
    step: Position = None,
    as_json: AsJson = False,
) -> None:
    """Approve steps that wait for a person."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.rescue.actions import approve_steps

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            count = approve_steps(uow, campaign, email=lead, position=step)
            uow.commit()
    except LookupError as exc:
        fail(str(exc))
    if as_json:
        emit_json({"campaign": campaign, "lead": lead, "step": step, "approved": count})
        return
    out.print(f"{count} steps approved")


@steps_app.command("resend")
def steps_resend(
    ctx: typer.Context, campaign: Campaign, lead: Lead, step: Position = None, as_json: AsJson = False
) -> None:
    """Try a failed step again (the same email; it never arrived)."""
    _decide(ctx, "resend", campaign, lead, step, as_json)


@steps_app.command("skip")
def steps_skip(
    ctx: typer.Context, campaign: Campaign, lead: Lead, step: Position = None, as_json: AsJson = False
) -> None:
    """Go on without a failed (or queued) step; the next email does not reply to it."""
    _decide(ctx, "skip", campaign, lead, step, as_json)


def _decide(ctx: typer.Context, what: str, campaign: str, lead: str, step: int | None, as_json: bool) -> None:
    from dataclasses import asdict

    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.rescue.step_decisions import DecisionRefused, resend_step, skip_step

    decide = resend_step if what == "resend" else skip_step
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            done = decide(uow, campaign, lead, step)
            uow.commit()
    except (LookupError, DecisionRefused) as exc:
        fail(str(exc))
    if as_json:
        emit_json({"campaign": campaign, "lead": lead, **asdict(done)})
        return
    out.print(f"{lead}: step {done.position} {done.state}; {done.note}", highlight=False)


@steps_app.command("failed")
def steps_failed(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Steps waiting for a person: failed for good, or with an unknown outcome."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.rescue.step_decisions import failed_steps

    instance = open_app(ctx)
    with instance.uow() as uow:
        rows = failed_steps(uow)
    if as_json:
        emit_json(rows)
        return
    table = Table(title="steps waiting for a person")
    for column in ("campaign", "lead", "step", "state", "since", "last error"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["campaign"], r["lead"], str(r["position"]), r["state"], r["since"], r["last_error"] or ""
        )
    out.print(table)
