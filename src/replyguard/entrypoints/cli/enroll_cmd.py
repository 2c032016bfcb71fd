"""`replyguard enroll --campaign NAME [--lead EMAIL] [--allow-parallel]`.

Every skipped lead is reported with its reason: a lead that is not active, a suppressed
address, a template its data cannot fill, or a person still mid-sequence from the same
mailbox in another campaign (`--allow-parallel` enrolls them anyway). A run that skipped
leads exits 1, as `leads import` does with skipped rows: a script must not take it for done.
"""

from typing import Annotated

import typer
from rich.markup import escape

from replyguard.entrypoints.cli.options import AsJson


def register(app: typer.Typer) -> None:
    """Add the `enroll` command to the CLI."""
    app.command("enroll")(enroll)


def enroll(
    ctx: typer.Context,
    campaign: Annotated[str, typer.Option("--campaign", help="Campaign name.")],
    lead: Annotated[str | None, typer.Option("--lead", help="Only this lead's email.")] = None,
    allow_parallel: Annotated[
        bool,
        typer.Option(
            "--allow-parallel",
            help="Also enroll people still mid-sequence from the same mailbox in another campaign.",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Enroll the campaign product's leads (or one) and schedule all their steps."""
    from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app, out, progress_bar
    from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads

    instance = open_app(ctx)
    report = EnrollReport()
    try:
        with instance.uow() as uow:
            ids = candidate_lead_ids(uow, campaign, lead)
        with progress_bar() as progress:
            task = progress.add_task("enrolling", total=len(ids))
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                with instance.uow() as uow:
                    enroll_leads(uow, campaign, chunk, report, allow_parallel=allow_parallel)
                    uow.commit()
                progress.advance(task, len(chunk))
    except LookupError as exc:
        fail(str(exc))
    for address, why in report.skipped:
        err.print(f"[yellow]skipped {escape(address)}:[/] {escape(why)}", highlight=False, markup=True)
    if as_json:
        emit_json(
            {
                "campaign": campaign,
                "enrolled": report.enrolled,
                "already_enrolled": report.already,
                "skipped": [{"lead": address, "why": why} for address, why in report.skipped],
            }
        )
    else:
        out.print(
            f"{report.enrolled} enrolled, {report.already} already enrolled, {len(report.skipped)} skipped"
        )
    if report.skipped:
        raise typer.Exit(1)
