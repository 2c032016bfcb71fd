"""`replyguard up`: the whole system for a small team, in one process.

Runs together, each in its own thread, until Ctrl-C or SIGTERM:

* the web app (pages, REST API, webhooks, one-click unsubscribe) on --host/--port;
* the guarded worker (`replyguard worker`);
* one IMAP poller per --imap URL (`replyguard poll`), or, with none, one for every watched
  folder of every connected mailbox (`replyguard poll` without a URL);
* the notice delivery of Reply Rescue (`replyguard notify`): the outbox to every configured
  channel (an email to the owner by default, REPLYGUARD_NOTIFY_* for webhooks), and the
  model's drafts when REPLYGUARD_MODEL_URL is set. With no channel and no model it is left
  out, and the rest runs as before.

Each part can still run on its own (`serve`, `worker`, `poll`) on other machines against
PostgreSQL, when one process is no longer enough. On SQLite, `up` is the way to run: one
process, one writer at a time, the page reads never block it (service_layer/scoped.py).
The first Ctrl-C or SIGTERM stops within seconds (entrypoints/stopping.py): the worker hands
nothing more over, finishes the email in flight (or cuts it after a grace: then it is given
back or, past the final dot, held as unknown) and gives back the rest of what it claimed;
pollers release their lease; the web server finishes its requests. A second one exits at
once. Exit code 130 after Ctrl-C, 0 after SIGTERM (a service manager's stop).

No `from __future__ import annotations`: Typer would compile and evaluate the command's string
annotations on every start (app.py says why); names for type checking only are quoted.
"""

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from replyguard.entrypoints.cli.options import AllowLocalhostUnsubscribe

if TYPE_CHECKING:  # the CLI starts fast: nothing heavy is imported before a command runs
    import socket

    from replyguard.bootstrap import App
    from replyguard.entrypoints.supervisor import Component, Supervisor
    from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery
    from replyguard.service_layer.sending.worker import Worker

Run = Callable[[threading.Event], None]

log = logging.getLogger("replyguard.up")


def register(app: typer.Typer) -> None:
    app.command("up")(up)


def up(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    imap: Annotated[
        list[str] | None,
        typer.Option(
            "--imap",
            help="An IMAP folder to poll (repeat for several). Or REPLYGUARD_IMAP_URL, several "
            "separated by spaces, which keeps passwords out of the process list.",
        ),
    ] = None,
    worker: Annotated[bool, typer.Option("--worker/--no-worker", help="Run the sending worker.")] = True,
    log_format: Annotated[
        str | None,
        typer.Option("--log-format", help="text or json (env REPLYGUARD_LOG_FORMAT; default text)"),
    ] = None,
    allow_localhost_unsubscribe: AllowLocalhostUnsubscribe = False,
) -> None:
    """Run the web app, the worker and the IMAP pollers together (Ctrl-C stops)."""
    from replyguard.adapters.imap_source import ImapUrlError, parse_imap_url
    from replyguard.entrypoints.allocator import limit_arenas
    from replyguard.entrypoints.cli.app import check_public_url, fail, open_app, simulated_note
    from replyguard.entrypoints.logs import configure_logging
    from replyguard.entrypoints.supervisor import Supervisor

    instance = open_app(ctx, running_clock=True)
    # Two malloc arenas, before the parts' threads allocate (allocator.py).
    limit_arenas(already=instance.environment.malloc_arena_max)
    try:
        configure_logging(
            log_format or instance.environment.log_format, simulated=lambda: simulated_note(instance)
        )
    except ValueError as exc:
        instance.close()
        fail(str(exc), code=2)
    urls = list(imap or instance.environment.imap_urls)
    for url in urls:
        try:
            parse_imap_url(url)
        except ImapUrlError as exc:
            instance.close()
            fail(str(exc), code=2)
    if worker:
        try:
            _ = instance.transport
        except ValueError as exc:  # a --transport or REPLYGUARD_TRANSPORT that does not parse
            fail(str(exc), code=2)
        check_public_url(instance, allow_localhost=allow_localhost_unsubscribe)
    try:
        notices = notice_delivery(instance)
    except ValueError as exc:  # a --transport or REPLYGUARD_TRANSPORT the email channel cannot use
        instance.close()
        fail(str(exc), code=2)
    try:
        sock = _bind(host, port)
    except OSError as exc:
        instance.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    sender = WorkerPart(instance) if worker else None
    supervisor = Supervisor(_components(instance, sock, urls, worker=worker, notices=notices, sender=sender))
    where = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
    parts = ["web"] + ["worker"] * worker
    parts += [
        f"{len(urls)} IMAP poller{'s' * (len(urls) != 1)}" if urls else "the connected mailboxes' pollers"
    ]
    if notices is not None:
        parts.append(f"notices by {', '.join(notices.channels) or 'nobody (model drafts only)'}")
    code = _run_until_stopped(
        supervisor, sender, f"replyguard is up at {where} ({', '.join(parts)}); Ctrl-C stops"
    )
    sock.close()
    instance.close()
    if supervisor.failed:
        fail(f"stopped because {', '.join(supervisor.failed)} failed (see the log above)")
    if code:
        raise typer.Exit(code)


def _run_until_stopped(supervisor: "Supervisor", sender: "WorkerPart | None", banner: str) -> int:
    """Start the components, wait for a signal (or an essential component's failure), stop
    them all within `stopping.LIMIT` seconds; the exit code the signal asks for."""
    from replyguard.entrypoints.cli.app import err
    from replyguard.entrypoints.stopping import GRACE, LIMIT, StopSignals, wind_down

    with StopSignals(supervisor.stop) as signals:
        supervisor.start()
        err.print(banner, highlight=False)
        supervisor.stop.wait()
        if sender is not None:
            wind_down(sender.finished, sender.interrupt)
        still = supervisor.join(timeout=LIMIT - GRACE)
    if still:
        log.warning("did not stop in time: %s", ", ".join(still))
    return signals.exit_code


def _bind(host: str, port: int) -> "socket.socket":
    """Bind here, before any thread starts, so that a busy port is one clear error."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it. Without it a keep-alive response written in two parts
    # waits for the browser's delayed ACK: 40 ms on every request after the first (measured).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        # Listening now, not when the web thread gets to it: a browser (or a test) that
        # connects as soon as "replyguard is up" is printed waits in the backlog instead of
        # being refused.
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _components(
    instance: "App",
    sock: "socket.socket",
    urls: list[str],
    *,
    worker: bool,
    notices: "NoticeDelivery | None" = None,
    sender: "WorkerPart | None" = None,
) -> list["Component"]:
    from replyguard.entrypoints.supervisor import Component

    found = [Component("web", _web(instance, sock), essential=True)]
    if worker:
        found.append(Component("worker", (sender or WorkerPart(instance)).run))
    for index, url in enumerate(urls, start=1):
        found.append(Component(f"imap-{index}", _poller(instance, url)))
    if not urls:
        # No folder named: every connected mailbox's folders, including those connected later.
        found.append(Component("mailboxes", _mailbox_pollers(instance)))
    if notices is not None:
        found.append(Component("notices", _notices(notices)))
    return found


def notice_delivery(instance: "App") -> "NoticeDelivery | None":
    """The notice outbox's delivery as `replyguard notify` runs it, or None when there is
    nothing to do (no channel, no model). Raises ValueError for a transport that does not parse."""
    channels = instance.notice_channels()
    if not channels and instance.model.url is None:
        return None
    return instance.notice_delivery(channels)


def _notices(delivery: "NoticeDelivery") -> Run:
    from replyguard.service_layer.rescue.notice_delivery import run_forever

    def run(stop: threading.Event) -> None:
        def sleep(seconds: float) -> None:
            stop.wait(seconds)  # wakes at once when `up` is stopping

        report = run_forever(delivery, stop.is_set, sleep)
        log.info("notice delivery stopped: %s delivered, %s to retry", report.delivered, report.retried)

    return run


def _web(instance: "App", sock: "socket.socket") -> Run:
    import uvicorn

    from replyguard.entrypoints.cli.serve_cmd import RedactSecrets
    from replyguard.entrypoints.http import create_app

    api = create_app(instance)
    logging.getLogger("uvicorn.access").addFilter(RedactSecrets())

    def run(stop: threading.Event) -> None:
        # proxy_headers off: the app believes only REPLYGUARD_TRUSTED_PROXIES (entrypoints/web).
        # Open requests get the worker's grace to finish, so that `up` exits within seconds.
        config = uvicorn.Config(
            api, log_config=None, proxy_headers=False, timeout_graceful_shutdown=5, lifespan="off"
        )
        server = uvicorn.Server(config)

        def stop_when_asked() -> None:
            stop.wait()
            server.should_exit = True

        threading.Thread(target=stop_when_asked, name="web-stop", daemon=True).start()
        server.run(sockets=[sock])

    return run


class WorkerPart:
    """The worker component of `up`, kept at hand so that a stop can cut its email in flight
    (`wind_down`). `finished` is set whenever no pass of the worker is running."""

    def __init__(self, instance: "App") -> None:
        self.instance = instance
        self.current: Worker | None = None
        self.finished = threading.Event()
        self.finished.set()

    def run(self, stop: threading.Event) -> None:
        from replyguard.service_layer.sending.worker import Worker, run_forever

        self.finished.clear()
        try:
            self.current = Worker(self.instance, stop=stop)  # each mailbox's own transport
            report = run_forever(self.current)
        finally:
            self.finished.set()
        log.info(
            "worker stopped: %s sent, %s refused, %s claimed email(s) not handed over, given back to "
            "the queue",
            report.sent,
            report.refused,
            report.given_back,
        )

    def interrupt(self) -> None:
        if self.current is not None:
            self.current.interrupt()


def _mailbox_pollers(instance: "App") -> Run:
    from replyguard.service_layer.inbound.ingest import IngestResult
    from replyguard.service_layer.inbound.pollers import ingest_fetched

    def report(result: IngestResult) -> None:
        log.info("inbound %s: %s %s", result.inbound_id, result.status, result.kind or "")

    def run(stop: threading.Event) -> None:
        instance.mailbox_pollers(ingest_fetched(instance, report)).run(stop)

    return run


def _poller(instance: "App", url: str) -> Run:
    from replyguard.service_layer.inbound.ingest import IngestResult
    from replyguard.service_layer.inbound.pollers import ingest_fetched

    def report(result: IngestResult) -> None:
        log.info("inbound %s: %s %s", result.inbound_id, result.status, result.kind or "")

    def run(stop: threading.Event) -> None:
        instance.imap_poller(url, ingest_fetched(instance, report)).run(stop)

    return run
