"""Mailgun inbound routes (forward() to a URL): `/hooks/mailgun` and `/hooks/mailgun/mime`.

Mailgun posts raw MIME in `body-mime` only when the route URL ends in `mime`, hence the
second path. Authenticity: HMAC-SHA256(signing key, timestamp + token) in `signature`, a
timestamp within five minutes of our clock, and a token never accepted before.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run
# time, and they name `read_body`, a local of `router()`.

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.auth import Rejected, verify_mailgun
from replyguard.entrypoints.http.inbound import accept, body_reader, convert, form_of
from replyguard.entrypoints.http.payloads import mailgun_raw
from replyguard.service_layer import webhook_nonces as nonces

log = logging.getLogger(__name__)
PROVIDER = "mailgun"


def router(app: App) -> APIRouter:
    routes = APIRouter()
    read_body = body_reader(app.settings.inbound_max_bytes)

    @routes.post("/hooks/mailgun")
    @routes.post("/hooks/mailgun/mime")
    def mailgun_inbound(request: Request, body: Annotated[bytes, Depends(read_body)]) -> JSONResponse:
        key = app.settings.mailgun_signing_key
        if not key:
            raise HTTPException(404)
        form = form_of(request, body)
        token = form.text("token") or ""
        try:
            verify_mailgun(
                key,
                form.text("timestamp") or "",
                token,
                form.text("signature") or "",
                now=app.clock.now(),
            )
        except Rejected as exc:
            log.warning("mailgun: refused: %s", exc)
            raise HTTPException(401, "signature refused") from None
        with app.uow() as uow:
            replayed = nonces.seen(uow, PROVIDER, token)
        if replayed:
            log.warning("mailgun: refused a replayed token")
            raise HTTPException(403, "replayed")
        response = accept(app, convert(PROVIDER, lambda: mailgun_raw(form), body), PROVIDER)
        with app.uow() as uow:
            nonces.remember(uow, PROVIDER, token)
            uow.commit()
        return response

    return routes
