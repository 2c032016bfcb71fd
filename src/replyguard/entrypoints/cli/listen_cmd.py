"""`replyguard listen`: receive replies from the MTA over LMTP (default) or plain SMTP."""

import signal
import threading
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def listen(
        ctx: typer.Context,
        lmtp: Annotated[bool, typer.Option("--lmtp/--smtp", help="Protocol to speak.")] = True,
        host: Annotated[str, typer.Option("--host", help="Interface to bind (keep it private).")] = (
            "127.0.0.1"
        ),
        port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8024,
    ) -> None:
        """Store every delivered message, then answer 250 (451 if it could not be stored)."""
        from replyguard.entrypoints.cli.app import err, open_app
        from replyguard.entrypoints.lmtp import Listener
        from replyguard.service_layer.inbound.quarantine import Sweeper

        instance = open_app(ctx, running_clock=True)
        listener = Listener(
            instance, lmtp=lmtp, host=host, port=port, data_size_limit=instance.settings.message_max_bytes
        )
        stopping = threading.Event()

        def _stop(_signum: int, _frame: object) -> None:
            stopping.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        listener.start()
        err.print(f"listening for {'LMTP' if lmtp else 'SMTP'} on {host}:{port}; Ctrl-C stops")
        try:
            with Sweeper(instance):  # messages a crash left stored but unprocessed
                stopping.wait()
        finally:
            listener.stop()
            instance.close()
