"""`replyguard notify [--once]`: deliver the notice outbox (and the model's drafts, when a model
is configured). A long-running loop like the worker's, stopped cleanly by SIGTERM or Ctrl-C."""

import signal
import time
from typing import Annotated

import typer

from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app, out


def register(app: typer.Typer) -> None:
    app.command("notify")(notify)


def notify(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Deliver what is due now, then exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
) -> None:
    """Deliver notices to the owner (email), a signed webhook and a Slack-compatible webhook."""
    from replyguard.service_layer.rescue.notice_delivery import run_forever, undelivered

    instance = open_app(ctx, running_clock=not once)
    try:
        channels = instance.notice_channels()
    except ValueError as exc:
        fail(str(exc), code=2)
    if not channels:
        fail("no notice channel: REPLYGUARD_NOTIFY_EMAIL=0 and no webhook configured", code=2)
    delivery = instance.notice_delivery(channels)
    if once:
        report = delivery.run_once()
    else:
        stopping = {"now": False}

        def _stop(_signum: int, _frame: object) -> None:
            stopping["now"] = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        err.print(f"delivering notices to {', '.join(c.name for c in channels)}; Ctrl-C stops")
        report = run_forever(delivery, lambda: stopping["now"], time.sleep)
    left = undelivered(instance)
    instance.close()
    summary = {**vars(report), "waiting": sum(1 for d in left if d["state"] == "pending")}
    summary["given_up_total"] = sum(1 for d in left if d["state"] == "failed")
    if as_json:
        emit_json(summary)
    else:
        out.print(", ".join(f"{k} {v}" for k, v in summary.items()))
