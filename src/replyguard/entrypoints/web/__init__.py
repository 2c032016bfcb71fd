"""The web workspace: server-rendered pages, the REST API (/api/v1, OpenAPI at /docs),
/metrics and /readyz, on the FastAPI app of `entrypoints/http`.

`install(api, app)` adds everything to an existing FastAPI application; the webhooks and
one-click unsubscribe stay where they are.

Errors become pages with the navigation (404, 403, 409, 500, ...) or, under the machine
prefixes, JSON; a bug is a styled 500 page that says nothing of its cause (the log has it).
Behind reverse proxies named in REPLYGUARD_TRUSTED_PROXIES, and only then, the client address
and scheme are read from X-Forwarded-For and X-Forwarded-Proto (uvicorn's own middleware,
added here so that the app decides whatever server runs it: `serve`, `up` and the tests all
start uvicorn with its proxy headers off).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import fastapi_offline
from fastapi import FastAPI
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.routing import iter_route_contexts
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from replyguard import __version__
from replyguard.bootstrap import App
from replyguard.domain.access import AccessDenied
from replyguard.entrypoints.web import api, ops, pages
from replyguard.entrypoints.web.config import WebSettings
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.middleware import SecurityHeaders
from replyguard.entrypoints.web.render import Renderer
from replyguard.entrypoints.web.security import (
    CsrfRefused,
    Guards,
    LoginRequired,
    PasswordChangeRequired,
    make_guards,
)
from replyguard.service_layer.queries import NotFound

__all__ = ["WebSettings", "install"]

#: Paths whose errors stay JSON (machines call them); everything else is a page.
MACHINE_PREFIXES = ("/api/", "/hooks/", "/u/", "/healthz", "/readyz", "/metrics", "/openapi.json")
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def install(api_app: FastAPI, app: App, settings: WebSettings | None = None) -> None:
    ctx = WebContext(
        app,
        app.scoped,
        settings or WebSettings.of(app.environment),
        Renderer((app.simulated, app.clock) if app.simulated else None),
    )
    guards = make_guards(ctx)
    registry = CollectorRegistry()
    for page_router in pages.routers(ctx, guards):
        api_app.include_router(page_router)
    api_app.include_router(api.router(ctx, guards))
    api_app.include_router(ops.router(ctx, registry))
    api_app.mount("/static", StaticFiles(packages=[("replyguard.entrypoints.web", "static")]), name="static")
    swagger = Path(fastapi_offline.__file__).parent / "static"
    api_app.mount("/docs-assets", StaticFiles(directory=swagger), name="docs-assets")
    _openapi(api_app, ctx)
    _errors(api_app, ctx, guards)
    api_app.add_middleware(ops.HttpMetrics, registry=registry)
    api_app.add_middleware(SecurityHeaders)
    if ctx.settings.trusted_proxies:
        api_app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(ctx.settings.trusted_proxies))


def _openapi(api_app: FastAPI, ctx: WebContext) -> None:
    """OpenAPI of /api/v1 only (pages and webhooks are not the REST API), and Swagger UI."""
    cache: dict[str, Any] = {}

    def schema() -> Any:
        if "schema" not in cache:
            routes = [r for r in iter_route_contexts(api_app.routes) if (r.path or "").startswith(api.PREFIX)]
            cache["schema"] = get_openapi(
                title="replyguard",
                version=__version__,
                description="The REST API of a replyguard workspace. Authenticate with "
                "`Authorization: Bearer <token>` (`replyguard tokens create`).",
                routes=routes,
            )
            cache["schema"]["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            cache["schema"]["security"] = [{"bearer": []}]
        return cache["schema"]

    @api_app.get("/openapi.json", include_in_schema=False)
    def openapi_json() -> JSONResponse:
        return JSONResponse(schema())

    @api_app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> Response:
        return ctx.renderer.page(request, "docs.html", {}, csp=DOCS_CSP)


def _machine(request: Request) -> bool:
    return request.url.path.startswith(MACHINE_PREFIXES)


TITLES = {
    400: "Not understood",
    403: "Not allowed",
    404: "Not found",
    409: "Changed meanwhile",
    413: "Too large",
    429: "Too many requests",
    500: "Something went wrong",
    503: "Unavailable",
}


def _errors(api_app: FastAPI, ctx: WebContext, guards: Guards) -> None:
    def error_page(request: Request, status: int, message: str) -> Response:
        try:
            viewer = guards.optional_viewer(request)
        except Exception:  # a broken database must not turn an error page into another error
            viewer = None
        title = TITLES.get(status, "Error")
        context = {"viewer": viewer, "status": status, "title": title, "message": message}
        return ctx.renderer.page(request, "error.html", context, status=status)

    @api_app.exception_handler(LoginRequired)
    def login_required(request: Request, _exc: Exception) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)

    @api_app.exception_handler(CsrfRefused)
    def csrf_refused(request: Request, _exc: Exception) -> Response:
        return error_page(
            request, 403, "This form expired or did not come from this site. Reload the page and try again."
        )

    @api_app.exception_handler(PasswordChangeRequired)
    def password_change(_request: Request, _exc: Exception) -> Response:
        return RedirectResponse("/account", status_code=303)

    @api_app.exception_handler(AccessDenied)
    def denied(request: Request, exc: Exception) -> Response:
        if _machine(request):
            return JSONResponse({"detail": str(exc)}, status_code=403)
        return error_page(request, 403, f"{exc}. Ask an admin of this workspace.")

    @api_app.exception_handler(Exception)
    def bug(request: Request, exc: Exception) -> Response:
        # Starlette logs the traceback after this answer; the person gets no detail of it.
        if _machine(request):
            return JSONResponse({"detail": "internal error"}, status_code=500)
        return error_page(
            request,
            500,
            "This is a bug in replyguard, and it is logged. Go back and try again, or report it.",
        )

    @api_app.exception_handler(NotFound)
    def not_found(request: Request, exc: Exception) -> Response:
        if _machine(request):
            return JSONResponse({"detail": "not found"}, status_code=404)
        return error_page(request, 404, "There is nothing here, or it belongs to another workspace.")

    @api_app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if _machine(request):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        message = "There is nothing here." if exc.status_code == 404 else str(exc.detail)
        return error_page(request, exc.status_code, message)

    @api_app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        if _machine(request):
            # ASCII-escaped: the errors echo the input, which may hold what UTF-8 cannot carry
            # (an unpaired surrogate sent as \ud800 in JSON); the default encoder would fail
            # inside this handler and reset the connection.
            errors = _without_secrets(exc.errors())
            body = json.dumps({"detail": jsonable_encoder(errors)}, ensure_ascii=True, default=str)
            return Response(body, status_code=422, media_type="application/json")
        return error_page(request, 400, "The request was not understood: a field is missing or malformed.")


#: Fields whose value a validation error never echoes (a mailbox's password, say).
_SECRET_FIELDS = ("password", "secret", "token")


def _secret_name(name: object) -> bool:
    return isinstance(name, str) and any(word in name.lower() for word in _SECRET_FIELDS)


def _without_secrets(errors: Any) -> list[dict[str, Any]]:
    """Validation errors echo their input: never a secret field's value, alone or in its body."""
    found = []
    for raw in errors:
        error = dict(raw)
        value = error.get("input")
        if any(_secret_name(part) for part in error.get("loc", ())):
            error["input"] = "***"
        elif isinstance(value, dict):
            error["input"] = {k: "***" if _secret_name(k) else v for k, v in value.items()}
        found.append(error)
    return found
