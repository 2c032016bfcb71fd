"""`replyguard serve`: the HTTP surface (the web workspace and REST API, one-click unsubscribe,
inbound webhooks) via uvicorn. `replyguard up` serves the same app next to the worker."""

import logging
import re
from typing import Annotated

import typer

#: Secrets travel in some URLs (SendGrid's path secret, unsubscribe tokens): never log them.
_SECRET_IN_PATH = re.compile(r"(/hooks/sendgrid/|/u/|[?&]secret=)[^/?&\s\"]+")


class RedactSecrets(logging.Filter):
    """Rewrites uvicorn access-log arguments so URL secrets do not reach the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _SECRET_IN_PATH.sub(r"\1…", a) if isinstance(a, str) else a for a in record.args
            )
        return True


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        ctx: typer.Context,
        host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    ) -> None:
        """Serve the web workspace, the REST API, one-click unsubscribe and the inbound webhooks."""
        import uvicorn

        from replyguard.entrypoints.allocator import limit_arenas
        from replyguard.entrypoints.cli.app import fail, open_app, simulated_note
        from replyguard.entrypoints.http import create_app
        from replyguard.entrypoints.logs import configure_logging
        from replyguard.service_layer.inbound.quarantine import Sweeper

        instance = open_app(ctx, running_clock=True)
        # Two malloc arenas, before the server's threads allocate (allocator.py).
        limit_arenas(already=instance.environment.malloc_arena_max)
        log_format = instance.environment.log_format
        # Otherwise uvicorn's own log format, as before; on a simulated clock ours, which says so.
        if log_format or instance.simulated:
            try:
                configure_logging(log_format, simulated=lambda: simulated_note(instance))
            except ValueError as exc:
                instance.close()
                fail(str(exc), code=2)
        logging.getLogger("uvicorn.access").addFilter(RedactSecrets())
        try:
            with Sweeper(instance):  # messages a crash left stored but unprocessed
                # h11's limit on a request's header section (16 KiB by default) stays in force.
                uvicorn.run(
                    create_app(instance),
                    host=host,
                    port=port,
                    # The app decides whom to believe (REPLYGUARD_TRUSTED_PROXIES), not uvicorn's
                    # default of trusting any X-Forwarded-For from loopback.
                    proxy_headers=False,
                    log_config=None if log_format or instance.simulated else uvicorn.config.LOGGING_CONFIG,
                )
        finally:
            instance.close()
