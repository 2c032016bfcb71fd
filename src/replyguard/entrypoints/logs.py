"""Logging for the long-running commands: plain lines, or one JSON object per line.

`REPLYGUARD_LOG_FORMAT=json` (or `replyguard up --log-format json`) gives JSON lines with
`ts`, `level`, `logger`, `msg` (and `exc` for a traceback), for log shippers. A process on a
simulated clock (`--now`) says so on every line: `simulated` in JSON, a bracket in text. Messages are
written by our code, which keeps secrets out of them; URL secrets in uvicorn's access lines
are redacted by `serve_cmd.RedactSecrets`.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime

FORMATS = ("text", "json")


class SimulatedClock(logging.Filter):
    """Stamps every record with what `note()` says (the simulated time, and where it came from)."""

    def __init__(self, note: Callable[[], str | None]) -> None:
        super().__init__()
        self.note = note

    def filter(self, record: logging.LogRecord) -> bool:
        note = self.note()
        record.simulated = f" [{note}]" if note else ""
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        simulated = str(getattr(record, "simulated", ""))
        if simulated:
            payload["simulated"] = simulated.strip(" []")
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False, default=str)


def configure_logging(
    fmt: str | None, level: int = logging.INFO, simulated: Callable[[], str | None] | None = None
) -> None:
    """Send every logger (uvicorn's included) to stderr in one format; `simulated` gives the
    note each line carries on a simulated clock."""
    fmt = (fmt or "text").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"log format must be text or json, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s:%(simulated)s %(message)s")
        )
    handler.addFilter(SimulatedClock(simulated or (lambda: None)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its start-up chatter says nothing
