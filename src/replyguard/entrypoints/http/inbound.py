"""What every inbound webhook shares: a bound on concurrent requests, the spooled body,
refusals that are logged (and kept when authenticated), and "store, then answer 2xx".

Order of work for every request, cheapest first: the credentials that need no body (Postmark
Basic, SendGrid's URL secret); a slot among `inbound_max_concurrent`; the body, refused past
`inbound_max_bytes`; the signature inside the body (Mailgun) from a pass that holds only the
signature fields; then, authenticated, the message is rebuilt and stored.

A refused request is logged with the provider, the answer and the reason — never the path
(SendGrid's secret is in it) nor anything of the body. When the request was authenticated,
its head and the reason are also kept as a `refused` inbound message for a person: SendGrid
never retries a 4xx, and the others give up after their retries.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.forms import BadForm, Body, Form, parse_form, spool
from replyguard.service_layer.inbound.ingest import WithStore, ingest_raw
from replyguard.service_layer.inbound.quarantine import keep_refused

log = logging.getLogger(__name__)

#: Seconds a provider is asked to wait when every slot is taken.
RETRY_AFTER = "30"


class Refused(Exception):
    """Answer `status` with a short text; log `reason`; keep `head` when authenticated."""

    def __init__(self, status: int, reason: str, head: bytes = b"") -> None:
        super().__init__(reason)
        self.status, self.reason, self.head = status, reason, head


class Gate:
    """At most `limit` webhook requests past authentication at once; the rest get `status`
    with Retry-After and are retried by the provider, so an accepted request is never lost.

    Counted on the event loop only (the dependencies are async), so no lock is needed.
    """

    def __init__(self, limit: int) -> None:
        self.limit, self.busy = limit, 0

    def slot(self, status: int) -> Callable[[], AsyncIterator[None]]:
        async def hold() -> AsyncIterator[None]:
            if self.busy >= self.limit:
                log.warning("inbound webhooks: all %s slots busy; answered %s", self.limit, status)
                raise HTTPException(status, "busy, try again later", headers={"Retry-After": RETRY_AFTER})
            self.busy += 1
            try:
                yield
            finally:
                self.busy -= 1

        return hold


def body_reader(limit: int) -> Callable[[Request], AsyncIterator[Body]]:
    """A FastAPI dependency: the spooled body (BodyTooLarge → 413 past `limit`), closed after."""

    async def read_body(request: Request) -> AsyncIterator[Body]:
        body = await spool(request, limit)
        try:
            yield body
        finally:
            body.close()

    return read_body


def authenticated(request: Request) -> None:
    """Mark the request as proven to come from its provider (refusals are then kept)."""
    request.state.authenticated = True


def form_of(request: Request, body: Body, **options: Any) -> Form:
    try:
        return parse_form(request.headers.get("content-type", ""), body.chunks(), **options)
    except BadForm as exc:
        raise Refused(400, f"not a form this endpoint reads: {exc}", body.head()) from None


def convert(source: str, build: Callable[[], bytes | None], body: Body) -> bytes:
    """Run a payload converter; 400 when it finds no message. If the converter itself fails,
    the request body is kept as it came, so that a person can still look at it."""
    try:
        raw = build()
    except Exception:
        log.exception("%s: could not rebuild the message; storing the request body as it came", source)
        return body.read()
    if raw is None:
        raise Refused(400, "no message in the request", body.head())
    return raw


def accept(app: App, raw: bytes, source: str, *, with_store: WithStore | None = None) -> JSONResponse:
    """Store and process; the 2xx goes out only after the store committed. A storage error
    propagates (→ 503, see create_app) so that the provider tries again."""
    result = ingest_raw(app, raw, source, with_store=with_store)
    log.info("%s: inbound %s %s%s", source, result.inbound_id, result.status, " (dup)" * result.duplicate)
    return JSONResponse({"status": result.status, "duplicate": result.duplicate})


def provider_of(request: Request) -> str:
    parts = request.url.path.strip("/").split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "hooks" else "http"


def record_refusal(app: App, request: Request, status: int, reason: str, head: Iterable[bytes]) -> None:
    """Log a refusal; keep it for a person when the request was authenticated."""
    provider = provider_of(request)
    kept = getattr(request.state, "authenticated", False)
    log.warning("%s: refused with %s: %s%s", provider, status, reason, " (kept)" if kept else "")
    if kept:
        try:
            keep_refused(app, b"".join(head), provider, f"HTTP {status}: {reason}")
        except SQLAlchemyError as exc:  # the answer stands; only the record of it is lost
            log.error("%s: could not keep the refusal: %s", provider, exc.__class__.__name__)
