"""SendGrid Inbound Parse: `/hooks/sendgrid/{secret}` (or `?secret=`), a multipart form.

Inbound Parse signs nothing by default, so the URL carries a long random secret, compared in
constant time before the body is read. With "POST the raw, full MIME message" on, the form
has `email`; otherwise the message is rebuilt from `headers`, `text`, `html` and the
attachments. SendGrid retries only 5xx answers: a busy server answers 503, and a request
refused with a 4xx is kept for a person (see inbound.py), since SendGrid will not send it again.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run
# time, and they name `read_body`, a local of `router()`.

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.auth import Rejected, verify_secret
from replyguard.entrypoints.http.forms import Body
from replyguard.entrypoints.http.inbound import Gate, accept, authenticated, body_reader, convert, form_of
from replyguard.entrypoints.http.payloads import sendgrid_raw

log = logging.getLogger(__name__)
PROVIDER = "sendgrid"


def router(app: App, gate: Gate) -> APIRouter:
    routes = APIRouter()
    read_body = body_reader(app.settings.inbound_max_bytes)

    def authorised(request: Request) -> None:
        secret = app.settings.sendgrid_secret
        if not secret:
            raise HTTPException(404)
        given = request.path_params.get("secret") or request.query_params.get("secret")
        try:
            verify_secret(given, secret)
        except Rejected as exc:
            log.warning("sendgrid: refused: %s", exc)
            raise HTTPException(403) from None
        authenticated(request)

    guards = [Depends(authorised), Depends(gate.slot(503))]

    @routes.post("/hooks/sendgrid", dependencies=guards)
    @routes.post("/hooks/sendgrid/{secret}", dependencies=guards)
    def sendgrid_inbound(request: Request, body: Annotated[Body, Depends(read_body)]) -> JSONResponse:
        form = form_of(request, body)
        return accept(app, convert(PROVIDER, lambda: sendgrid_raw(form), body), PROVIDER)

    return routes
