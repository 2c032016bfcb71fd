"""The FastAPI application factory. The replyguard App is passed in: no globals, no wiring
at import time. Endpoints are sync (FastAPI runs them in its thread pool) because the
service layer is; only body reading is async.

Errors are translated here and nowhere else: services raise their own exceptions. No
request, authenticated or not, gets a 5xx for what it contains: bad bodies are 400, bodies
over the limit 413, and only an unreachable database is a 503 (retried by the providers).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http import mailgun, postmark, sendgrid, unsubscribe
from replyguard.entrypoints.http.forms import BadForm, BodyTooLarge
from replyguard.entrypoints.http.inbound import Gate, Refused, record_refusal

log = logging.getLogger(__name__)


def create_app(app: App) -> FastAPI:
    """An ASGI app serving one-click unsubscribe, the inbound webhooks, /healthz and the web
    workspace (entrypoints/web)."""
    api = FastAPI(title="replyguard", docs_url=None, redoc_url=None, openapi_url=None)
    api.state.replyguard = app
    gate = Gate(app.settings.inbound_max_concurrent)
    api.include_router(unsubscribe.router(app))
    for module in (mailgun, postmark, sendgrid):
        api.include_router(module.router(app, gate))

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    # Sync handlers: Starlette runs them in the thread pool, where keeping a refusal may
    # write to the database.
    @api.exception_handler(BodyTooLarge)
    def too_large(request: Request, exc: Exception) -> PlainTextResponse:
        assert isinstance(exc, BodyTooLarge)
        record_refusal(app, request, 413, str(exc), [exc.head])
        return PlainTextResponse("request body too large", status_code=413)

    @api.exception_handler(Refused)
    def refused(request: Request, exc: Exception) -> PlainTextResponse:
        assert isinstance(exc, Refused)
        record_refusal(app, request, exc.status, exc.reason, [exc.head])
        return PlainTextResponse("bad request", status_code=exc.status)

    @api.exception_handler(BadForm)
    def bad_form(request: Request, exc: Exception) -> PlainTextResponse:
        record_refusal(app, request, 400, str(exc), [])
        return PlainTextResponse("bad request", status_code=400)

    from replyguard.entrypoints.web import install  # noqa: PLC0415 (the pages, /api/v1, /metrics, /readyz)

    install(api, app)

    @api.exception_handler(SQLAlchemyError)
    def storage_down(_request: Request, exc: Exception) -> JSONResponse:
        # Nothing was acknowledged: the provider (or the person) tries again later. The path
        # is not logged (it may carry a secret), nor the message (it may carry the mail).
        log.error("storage error: %s", exc.__class__.__name__)
        headers = {"Retry-After": "60"}
        return JSONResponse({"detail": "temporarily unavailable"}, status_code=503, headers=headers)

    return api
