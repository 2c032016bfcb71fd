"""`replyguard` command line: thin commands over the service layer.

Global options (each with an environment variable, shown by `--help`): `--db URL`, `--now
ISO-8601` (a simulated clock), `--workspace NAME`, `--transport SPEC`, `--debug`. How failures
are reported and the exit codes: `entrypoints/cli/errors.py`.

Start-up matters for a tool people type: this module imports only Typer and Rich. SQLAlchemy,
Alembic and the rest load inside the commands that use them (`replyguard --help` stays fast).
No `from __future__ import annotations` in the modules whose commands carry inline options
(this one, audit_cmd, poll_cmd, up_cmd): Typer reads every command's signature on each start
and evaluates a string annotation four times (twice through inspect.signature, twice through
get_type_hints), compiling it each time: about 1 ms a command. Names imported for type
checking only are quoted instead.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from replyguard import __version__
from replyguard.entrypoints.cli import errors
from replyguard.entrypoints.cli.options import AllowLocalhostUnsubscribe, AsJson

if TYPE_CHECKING:
    from rich.progress import Progress

    from replyguard.bootstrap import App
    from replyguard.service_layer.hooks import Hooks

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Outbound sequences that stop when a person answers.",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
# Markup off by default: names, subjects and reply text are user data, and a "[/]" in them
# must print as it is. A styled line asks for it (markup=True, its values escaped); a styled
# table cell is a `Text.from_markup(...)`.
out = Console(markup=False, highlight=False)
PIPED_WIDTH = 4096
err = Console(stderr=True, markup=False, highlight=False)


@dataclass
class Options:
    db: str | None
    now: str | None
    workspace: str | None
    transport: str | None
    #: Hooks handed to `main` by whoever embeds the command line (the tests' fault worker).
    hooks: "Hooks | None" = None

    def app(self, *, running_clock: bool = False, worker: bool = False) -> "App":
        from replyguard.bootstrap import bootstrap

        try:
            return bootstrap(
                self.db,
                now=self.now,
                running_clock=running_clock,
                transport=self.transport,
                workspace=self.workspace,
                hooks=self.hooks,
                worker=worker,
            )
        except ValueError as exc:
            fail(str(exc), code=errors.EXIT_USAGE)


def fail(message: str, code: int = errors.EXIT_PROBLEM) -> NoReturn:
    """One line on stderr, then exit: how every command reports a user error."""
    error_line(message)
    raise typer.Exit(code)


def error_line(message: str) -> None:
    """The line `fail` prints, for a command that reports a refused input and goes on."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)


def warn(where: str, message: str) -> None:
    """A problem that does not stop the command (a skipped row, a kept message)."""
    err.print(f"[yellow]{escape(where)}[/] {escape(message)}", markup=True, soft_wrap=True)


def progress_bar() -> "Progress":
    """A progress bar on stderr for a terminal. Nothing at all otherwise: a pipe or a log file
    would get the blank line a finished bar leaves, and a script reads stderr line by line."""
    from rich.progress import Progress

    return Progress(console=err, transient=True, disable=not err.is_terminal)


def opts(ctx: typer.Context) -> Options:
    value = ctx.obj
    assert isinstance(value, Options)
    return value


def emit_json(data: Any) -> None:
    import json  # here, not at the top: `replyguard --help` never needs it

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"replyguard {__version__}\n")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="URL",
            help="Database: sqlite:///PATH or postgresql://user@host/db "
            "(env REPLYGUARD_DATABASE_URL; default sqlite:///replyguard.db)",
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            metavar="ISO-8601",
            help="Simulated current time for trials and tests, e.g. 2026-12-07T09:00:00+00:00 "
            "(env REPLYGUARD_NOW; default the real clock)",
        ),
    ] = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", metavar="NAME", help="Workspace (env REPLYGUARD_WORKSPACE; default default)"
        ),
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            "--transport",
            metavar="SPEC",
            help="Where emails go: maildir:PATH, smtp://user:pass@host:587, smtps://...:465 "
            "(env REPLYGUARD_TRANSPORT; default maildir:outbox)",
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show the full traceback of an error (env REPLYGUARD_DEBUG=1)"),
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    # `main(..., hooks=...)` left the hooks in the context's object.
    ctx.obj = Options(db, now, workspace, transport, hooks=ctx.obj)
    if not out.is_terminal:
        # Piped into a file, grep or less: rows at their natural width, an address never
        # wrapped or cut at Rich's default of 80 columns.
        out.width = PIPED_WIDTH


def open_app(ctx: typer.Context, *, running_clock: bool = False, worker: bool = False) -> "App":
    """The command's App. A long-running process on a simulated clock (`--now`,
    REPLYGUARD_NOW) says so first thing; a one-shot command does when the clock came from the
    environment (a variable left set), not from a `--now` typed on its own line."""
    from replyguard.bootstrap import WorkspaceMissing

    instance = opts(ctx).app(running_clock=running_clock, worker=worker)
    missing = missing_sqlite_file(instance)
    if missing is not None:
        instance.close()
        fail(
            f"no database at {missing}: `replyguard init` creates one, or point --db "
            "(REPLYGUARD_DATABASE_URL) at an existing one; the demo `make run` builds is "
            "--db sqlite:///demo.db"
        )
    if instance.simulated and (running_clock or instance.simulated != "--now"):
        announce_clock(instance)
    # The command's context owns the app: its engine and transport are closed when the command
    # ends, however it ends (an SQLite file is checkpointed only when its last connection closes).
    ctx.call_on_close(instance.close)
    try:
        _ = instance.workspace_id
    except WorkspaceMissing as exc:
        fail(str(exc))
    return instance


def missing_sqlite_file(instance: "App") -> str | None:
    """The path of an SQLite database file that does not exist yet, else None. Only `init` and
    `demo` create a database: any other command would leave an empty file behind and fail on
    its first table."""
    url = instance.engine.url
    path = url.database
    if url.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return None if Path(path).exists() else path


def simulated_note(instance: "App") -> str | None:
    """ "simulated clock (--now): ..." for a process on one, else None."""
    if not instance.simulated:
        return None
    at = instance.clock.now().isoformat(timespec="seconds")
    return f"simulated clock ({instance.simulated}): it is {at} here, not the real time"


def announce_clock(instance: "App") -> None:
    """One line on stderr: every time this process records comes from a simulated clock."""
    note = simulated_note(instance)
    if note is not None:
        warn("warning:", f"{note}; every time this process records comes from it")


def check_public_url(instance: "App", *, allow_localhost: bool) -> None:
    """Before sending: unsubscribe links must reach the recipient. With REPLYGUARD_PUBLIC_URL
    unset they point at http://localhost:8000: one warning line for a trial (a Maildir), a
    refusal (exit 2) for real mail over SMTP (the default transport's, or a connected mailbox's
    own) unless the person says it is meant."""
    if not instance.settings.public_url_unset:
        return
    from replyguard.service_layer.workspace.mailbox_accounts import sends_by_own_smtp

    smtp = instance.transport_spec.startswith(("smtp://", "smtp+starttls://", "smtps://"))
    if not smtp:
        with instance.uow() as uow:
            smtp = sends_by_own_smtp(uow)  # a connected mailbox sends real mail too
    if smtp and not allow_localhost:
        fail(
            "REPLYGUARD_PUBLIC_URL is not set, so the List-Unsubscribe links of emails sent by SMTP "
            "would point at http://localhost:8000: set REPLYGUARD_PUBLIC_URL to the public address "
            "of `replyguard serve`, or pass --allow-localhost-unsubscribe",
            code=errors.EXIT_USAGE,
        )
    warn(
        "warning:",
        "REPLYGUARD_PUBLIC_URL is not set: List-Unsubscribe links point at http://localhost:8000 "
        "(fine on this machine, unreachable for recipients)",
    )


@app.command()
def init(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Create or migrate the database and the workspace."""
    instance = opts(ctx).app()
    ctx.call_on_close(instance.close)
    workspace_id = instance.init_database()
    if as_json:
        emit_json(
            {
                "database": instance.engine.url.render_as_string(hide_password=True),
                "workspace": instance.workspace,
                "workspace_id": workspace_id,
            }
        )
        return
    out.print(
        f"database ready; workspace [bold]{escape(instance.workspace)}[/] (id {workspace_id})", markup=True
    )


@app.command()
def worker(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Send everything due now, then exit.")] = False,
    allow_localhost_unsubscribe: AllowLocalhostUnsubscribe = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No line per email on stderr; only the summary.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
) -> None:
    """Send due steps, guarded by the reply re-check: one line per email as it happens (stderr),
    a summary on exit (stdout). Ctrl-C or SIGTERM stops within seconds: the email in flight
    finishes (or is cut and held as unknown), the rest of what was claimed goes back to the
    queue; exit 130 after Ctrl-C, 0 after SIGTERM."""
    import threading

    from replyguard.entrypoints.stopping import GRACE, LIMIT, StopSignals, wind_down
    from replyguard.service_layer.sending.worker import SendLine, Worker, run_forever

    instance = open_app(ctx, running_clock=not once, worker=True)
    try:
        instance.transport  # noqa: B018 - the default transport's spec parses, or exit 2 now
    except ValueError as exc:
        fail(str(exc), code=2)
    check_public_url(instance, allow_localhost=allow_localhost_unsubscribe)

    def tell(line: SendLine) -> None:
        if line.result == "given_back":
            return  # one line for all of them when the worker stops
        at = instance.clock.now().strftime("%Y-%m-%d %H:%M:%S")
        err.print(
            f"{at} {line.result:<8} step {line.position} to {line.to_address}: {line.subject}", soft_wrap=True
        )

    # No transport given: each mailbox sends through its own (`App.transport_for`).
    work = Worker(instance, on_result=None if quiet else tell, stop=threading.Event())
    done = threading.Event()

    def after_signal() -> None:
        # In the signal watcher's thread, while this one still sends.
        wind_down(done, work.interrupt)
        if not done.wait(LIMIT - GRACE):
            err.print(
                f"stopped on {signals.name} without finishing: a call did not return within "
                f"{LIMIT:g} s; what this worker still holds goes back to the queue (or is held as "
                "an unknown outcome) when its lease ends"
            )
            os._exit(signals.exit_code)

    with StopSignals(work.stop, after_signal) as signals:
        try:
            if once:
                report = work.run_once()
            else:
                url = instance.engine.url.render_as_string(hide_password=True)
                err.print(f"worker running on {url}; Ctrl-C stops")
                report = run_forever(work)
        finally:
            done.set()
    instance.close()
    if signals.received is not None:
        err.print(
            f"stopped on {signals.name}: {report.given_back} claimed email(s) not handed over, "
            "given back to the queue"
        )
    summary = {k: v for k, v in vars(report).items() if k != "outcomes"}
    if as_json:
        emit_json(summary)
    else:
        out.print(", ".join(f"{k} {v}" for k, v in summary.items()), soft_wrap=True)
    if signals.exit_code:
        raise typer.Exit(signals.exit_code)


@app.command()
def demo(
    ctx: typer.Context,
    examples: Annotated[Path, typer.Option("--examples", help="Folder with campaign and lead files.")] = Path(
        "examples"
    ),
    outbox: Annotated[Path, typer.Option("--outbox", help="Maildir the demo sends into.")] = Path(
        "demo-outbox"
    ),
) -> None:
    """Build a demo workspace from examples/ and watch a reply stop its queue."""
    from replyguard.entrypoints.cli.demo import DemoFilesMissing, run_demo

    options = opts(ctx)
    try:
        code = run_demo(options.db or "sqlite:///demo.db", examples, outbox, out)
    except DemoFilesMissing as exc:
        fail(str(exc), code=errors.EXIT_USAGE)
    raise typer.Exit(code)


from replyguard.entrypoints.cli import (  # noqa: E402
    campaign_cmd,
    enroll_cmd,
    inbound_cmd,
    inspect_cmd,
    leads_cmd,
    listen_cmd,
    mailbox_cmd,
    poll_cmd,
    reply_cmd,
    secrets_cmd,
    senders_cmd,
    serve_cmd,
    steps_cmd,
    tokens_cmd,
    up_cmd,
    users_cmd,
)

inspect_cmd.register(app)
leads_cmd.register(app)
reply_cmd.register(app)

serve_cmd.register(app)
listen_cmd.register(app)
poll_cmd.register(app)
senders_cmd.register(app)
inbound_cmd.register(app)
campaign_cmd.register(app)
mailbox_cmd.register(app)
secrets_cmd.register(app)
enroll_cmd.register(app)
steps_cmd.register(app)

from replyguard.entrypoints.cli import notify_cmd, threads_cmd  # noqa: E402

threads_cmd.register(app)
notify_cmd.register(app)
users_cmd.register(app)
tokens_cmd.register(app)
up_cmd.register(app)

from replyguard.entrypoints.cli import audit_cmd  # noqa: E402

audit_cmd.register(app)


def main(argv: list[str] | None = None, *, hooks: "Hooks | None" = None) -> None:
    """The `replyguard` script. Every failure becomes one line and an exit code (errors.py),
    a wrong option or argument too (Click would print a usage box of five lines). `hooks`:
    for a caller that watches the paths' named points (service_layer/hooks.py); the script
    passes none."""
    # Typer carries its own copy of Click (typer._click): its exceptions, not the click package's.
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    args = sys.argv[1:] if argv is None else argv
    try:
        code = app(args=args, prog_name="replyguard", standalone_mode=False, obj=hooks)
    except NoArgsIsHelpError as exc:  # the help is printed already
        sys.exit(exc.exit_code)
    except ClickException as exc:
        sys.exit(errors.report_usage(exc))
    except typer.Abort:  # a question answered with end of input
        sys.exit(errors.report_aborted())
    except (Exception, KeyboardInterrupt) as exc:
        if errors.debug_requested(args):
            raise
        sys.exit(errors.report(exc))
    sys.exit(code if isinstance(code, int) else 0)
