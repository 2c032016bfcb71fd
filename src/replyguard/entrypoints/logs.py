"""Logging for the long-running commands: plain lines, or one JSON object per line.

`REPLYGUARD_LOG_FORMAT=json` (or `replyguard up --log-format json`) gives JSON lines with
`ts`, `level`, `logger`, `msg` (and `exc` for a traceback), for log shippers. Messages are
written by our code, which keeps secrets out of them; URL secrets in uvicorn's access lines
are redacted by `serve_cmd.RedactSecrets`.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False, default=str)


def configure_logging(fmt: str | None, level: int = logging.INFO) -> None:
    """Send every logger (uvicorn's included) to stderr in one format."""
    fmt = (fmt or "text").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"log format must be text or json, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its start-up chatter says nothing
