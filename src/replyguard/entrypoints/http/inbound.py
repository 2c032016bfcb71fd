"""What every inbound webhook shares: the size-limited body, and "store, then answer 2xx"."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.forms import BadForm, Form, parse_form, read_limited
from replyguard.service_layer.ingest import ingest_raw

log = logging.getLogger(__name__)


def body_reader(limit: int) -> Callable[[Request], Awaitable[bytes]]:
    """A FastAPI dependency reading the whole body; BodyTooLarge (→ 413) past `limit`."""

    async def read_body(request: Request) -> bytes:
        return await read_limited(request, limit)

    return read_body


def form_of(request: Request, body: bytes) -> Form:
    try:
        return parse_form(request.headers.get("content-type", ""), body)
    except BadForm as exc:
        raise HTTPException(400, "expected a form post") from exc


def convert(source: str, build: Callable[[], bytes | None], body: bytes) -> bytes:
    """Run a payload converter; 400 when it finds no message. If the converter itself fails,
    the request body is kept as it came, so that a person can still look at it."""
    try:
        raw = build()
    except Exception:
        log.exception("%s: could not rebuild the message; storing the request body as it came", source)
        return body
    if raw is None:
        raise HTTPException(400, "no message in the request")
    return raw


def accept(app: App, raw: bytes, source: str) -> JSONResponse:
    """Store and process; the 2xx goes out only after the store committed. A storage error
    propagates (→ 503, see create_app) so that the provider tries again."""
    result = ingest_raw(app, raw, source)
    log.info("%s: inbound %s %s%s", source, result.inbound_id, result.status, " (dup)" * result.duplicate)
    return JSONResponse({"status": result.status, "duplicate": result.duplicate})
