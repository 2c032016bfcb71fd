"""Mailgun inbound routes (forward() to a URL): `/hooks/mailgun` and `/hooks/mailgun/mime`.

Mailgun posts raw MIME in `body-mime` only when the route URL ends in `mime`, hence the
second path. Authenticity: HMAC-SHA256(signing key, timestamp + token) in `signature`, a
timestamp no older than Mailgun's retries last (a retry carries the original timestamp, so a
request we refused for load must still pass hours later; domain/provider_retries.py), and a
token never accepted before, which is what stops a replay.

The signature travels inside the body, so the body is read (spooled, within the limit) and
first passed over keeping only `timestamp`, `token` and `signature`; nothing else is parsed,
rebuilt or stored before they verify. The token is claimed in the transaction that stores the
message: ten concurrent uses of one token store one body.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run
# time, and they name `read_body`, a local of `router()`.

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.domain.provider_retries import MAILGUN
from replyguard.entrypoints.http.auth import MAX_TOKEN, Rejected, verify_mailgun
from replyguard.entrypoints.http.forms import Body
from replyguard.entrypoints.http.inbound import Gate, accept, authenticated, body_reader, convert, form_of
from replyguard.entrypoints.http.payloads import mailgun_raw
from replyguard.service_layer.inbound import webhook_nonces as nonces
from replyguard.service_layer.inbound.ingest import stored_id

log = logging.getLogger(__name__)
PROVIDER = "mailgun"
_SIGNED = frozenset({"timestamp", "token", "signature"})


def router(app: App, gate: Gate) -> APIRouter:
    routes = APIRouter()
    read_body = body_reader(app.settings.inbound_max_bytes)

    def enabled() -> None:
        if not app.settings.mailgun_signing_key:
            raise HTTPException(404)

    # 429 when busy: Mailgun retries every answer but 2xx and 406.
    @routes.post("/hooks/mailgun", dependencies=[Depends(enabled), Depends(gate.slot(429))])
    @routes.post("/hooks/mailgun/mime", dependencies=[Depends(enabled), Depends(gate.slot(429))])
    def mailgun_inbound(request: Request, body: Annotated[Body, Depends(read_body)]) -> JSONResponse:
        key = app.settings.mailgun_signing_key
        assert key is not None
        signed = form_of(request, body, keep=_SIGNED.__contains__, max_kept=3 * (MAX_TOKEN + 100))
        token = signed.text("token") or ""
        try:
            verify_mailgun(
                key,
                signed.text("timestamp") or "",
                token,
                signed.text("signature") or "",
                # Mailgun signs with the real time: a simulated clock must not move the window.
                now=app.wall_clock.now(),
                max_age=MAILGUN.max_age,
            )
        except Rejected as exc:
            log.warning("mailgun: refused: %s", exc)
            raise HTTPException(401, "signature refused") from None
        authenticated(request)
        form = form_of(request, body)
        raw = convert(PROVIDER, lambda: mailgun_raw(form), body)
        try:
            response = accept(
                app,
                raw,
                PROVIDER,
                with_store=lambda uow: nonces.claim(uow, PROVIDER, token, at=app.wall_clock.now()),
            )
        except nonces.Replayed:
            return _replayed(app, raw)
        with app.uow() as uow:
            nonces.forget_expired(uow, PROVIDER, now=app.wall_clock.now(), keep=MAILGUN.keep_tokens)
            uow.commit()
        return response

    return routes


def _replayed(app: App, raw: bytes) -> JSONResponse:
    # Mailgun retries a request whose 200 it never received with the same token: if that
    # message is stored, answer as for any duplicate. Anything else with a used token is a replay.
    if stored_id(app, raw) is not None:
        return JSONResponse({"status": "stored", "duplicate": True})
    log.warning("mailgun: refused a replayed token")
    raise HTTPException(403, "replayed")
