"""`replyguard poll [--imap URL [--folder INBOX]] [--once] [--history]`: feed IMAP folders into
ingest: one folder (`--imap`), or, with no URL, every watched folder of every connected mailbox
(`replyguard mailbox add ... --imap`), one poller each, the list read again while it runs.

Runs until SIGTERM or SIGINT (the current message finishes and the lease is released), or
with `--once` reads what is there and exits. A folder's first start reads from now on; with
`--history` it imports the mail already there as history (it informs, it never stops a lead
as a fresh reply). Exit codes: 0 done, 1 another poller holds the folder (`--once`) or the
server or database failed, 2 a bad URL.

No `from __future__ import annotations`: Typer would compile and evaluate the command's string
annotations on every start (app.py says why); names for type checking only are quoted.
"""

import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

if TYPE_CHECKING:
    from replyguard.adapters.imap_source import Fetched
    from replyguard.bootstrap import App


def register(app: typer.Typer) -> None:
    """Add the `poll` command to the CLI."""
    app.command("poll")(poll)


def poll(
    ctx: typer.Context,
    imap: Annotated[
        str | None,
        typer.Option(
            "--imap",
            help="imaps://user:password@host:993/INBOX, or imap://...:143/INBOX (STARTTLS). "
            "Or set REPLYGUARD_IMAP_URL, which keeps the password out of the process list. "
            "Neither: every connected mailbox's folders.",
        ),
    ] = None,
    folder: Annotated[str | None, typer.Option("--folder", help="Overrides the URL's folder.")] = None,
    once: Annotated[bool, typer.Option("--once", help="Read what is there now, then exit.")] = False,
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="On the folder's first start, import the mail already there as history "
            "(it never stops a lead). Without it, reading starts from now.",
        ),
    ] = False,
) -> None:
    """Poll an IMAP folder, or every connected mailbox's folders (IDLE when offered), and
    ingest every new message once."""
    # Imported here: the CLI module imports this one, and start-up stays fast.
    from replyguard.adapters.imap_source import ImapUrlError, LeaseBusy
    from replyguard.entrypoints.cli.app import err, fail, open_app, out
    from replyguard.service_layer.inbound.ingest import IngestResult
    from replyguard.service_layer.inbound.pollers import ingest_fetched, read_cursor
    from replyguard.service_layer.inbound.quarantine import Sweeper, retry_stored

    instance = open_app(ctx, running_clock=not once)
    urls = [imap] if imap else list(instance.environment.imap_urls)

    def report(result: IngestResult) -> None:
        leads = ",".join(str(i) for i in result.lead_ids) or "-"
        again = " (already received)" if result.duplicate else ""
        out.print(
            f"inbound {result.inbound_id}: {result.status} {result.kind or ''} leads {leads}{again}",
            highlight=False,
        )

    if not urls:
        if folder is not None:
            instance.close()
            fail(
                "--folder goes with --imap; a connected mailbox's folders are its own (mailbox add --folder)",
                code=2,
            )
        _every_mailbox(instance, ingest_fetched(instance, report), once=once, history=history)
        return
    if len(urls) != 1:
        instance.close()
        fail("poll reads one folder: give --imap URL (or REPLYGUARD_IMAP_URL with one URL)", code=2)

    try:
        poller = instance.imap_poller(
            urls[0], ingest_fetched(instance, report), folder=folder, history=history
        )
    except ImapUrlError as exc:
        instance.close()
        fail(str(exc), code=2)
    try:
        if history and read_cursor(instance, poller.source.key).uidvalidity is not None:
            err.print(
                f"[yellow]--history applies to a folder's first start only: {escape(poller.source.key)} "
                "was started before; reading goes on from its cursor[/]",
                markup=True,
            )
        if once:
            count = poller.run_once()
            retry_stored(instance)
            out.print(f"{count} new messages in {poller.source.key}", highlight=False)
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
        signal.signal(signal.SIGINT, lambda _signum, _frame: stop.set())
        err.print(f"polling {poller.source.key}; Ctrl-C stops", highlight=False)
        with Sweeper(instance):
            poller.run(stop)
    except LeaseBusy as exc:
        fail(str(exc))
    except Exception as exc:  # the server, the network or the database: one line, no traceback
        fail(f"{poller.source.key}: {exc.__class__.__name__}: {str(exc)[:300]}")
    finally:
        instance.close()


def _every_mailbox(
    instance: "App", handle: Callable[["Fetched"], None], *, once: bool, history: bool
) -> None:
    """`poll` without a URL: every watched folder of every connected mailbox."""
    from replyguard.entrypoints.cli.app import err, fail, out
    from replyguard.service_layer.inbound.quarantine import Sweeper, retry_stored

    pollers = instance.mailbox_pollers(handle, history=history)
    try:
        if not pollers.sources():
            fail(
                "nothing to poll: give --imap URL, or connect a mailbox with an IMAP account"
                " (replyguard mailbox add EMAIL --imap URL --password-file F)",
                code=2,
            )
        if once:
            done = pollers.run_once()
            retry_stored(instance)
            for key, result in done.items():
                said = f"{result} new messages" if isinstance(result, int) else f"not read: {result}"
                out.print(f"{key}: {said}", highlight=False)
            if any(isinstance(result, str) for result in done.values()):
                fail(f"{sum(isinstance(r, str) for r in done.values())} of {len(done)} folders not read")
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
        signal.signal(signal.SIGINT, lambda _signum, _frame: stop.set())
        err.print(f"polling {len(pollers.sources())} folder(s) of the connected mailboxes; Ctrl-C stops")
        with Sweeper(instance):
            pollers.run(stop)
    finally:
        instance.close()
