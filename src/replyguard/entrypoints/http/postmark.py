"""Postmark inbound webhook: `/hooks/postmark`, JSON, protected by HTTP Basic auth.

Postmark signs nothing, so the credentials in the webhook URL (https://user:pass@host/...)
are the proof, checked before the body is read. A 401 makes Postmark retry (a 403 would stop
its retries), so a wrong password costs no mail once it is fixed. Postmark's JSON carries
every attachment twice (in `Attachments` and inside `RawEmail`): the body limit allows for it.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run
# time, and they name `read_body`, a local of `router()`.

import json
import logging
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.auth import Rejected, verify_basic
from replyguard.entrypoints.http.forms import Body
from replyguard.entrypoints.http.inbound import Gate, Refused, accept, authenticated, body_reader, convert
from replyguard.entrypoints.http.payloads import postmark_raw

log = logging.getLogger(__name__)
PROVIDER = "postmark"


def router(app: App, gate: Gate) -> APIRouter:
    routes = APIRouter()
    read_body = body_reader(app.settings.inbound_max_bytes)

    def authorised(request: Request) -> None:
        user, password = app.settings.postmark_user, app.settings.postmark_password
        if not user or not password:
            raise HTTPException(404)
        try:
            verify_basic(request.headers.get("authorization"), user, password)
        except Rejected as exc:
            log.warning("postmark: refused: %s", exc)
            raise HTTPException(401, headers={"WWW-Authenticate": 'Basic realm="replyguard"'}) from None
        authenticated(request)

    # 429 when busy: Postmark retries every answer but 200 and 403.
    @routes.post("/hooks/postmark", dependencies=[Depends(authorised), Depends(gate.slot(429))])
    def postmark_inbound(body: Annotated[Body, Depends(read_body)]) -> JSONResponse:
        try:
            payload = json.loads(body.read())
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than any payload
            raise Refused(400, "expected JSON", body.head()) from None
        if not isinstance(payload, dict):
            raise Refused(400, "expected a JSON object", body.head())
        return accept(app, convert(PROVIDER, lambda: postmark_raw(payload), body), PROVIDER)

    return routes
