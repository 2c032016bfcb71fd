"""Signing in and out. The sign-in form has no session yet, so its CSRF token is a
double-submit cookie: the form's hidden value must equal the `rg_login` cookie, which another
site can neither read nor set.

Sign-ins are throttled per (account, client) with growing waits, with wider limits per account
and per client address that a browser which signed in before is exempt from
(domain/throttle.py): its `rg_device` cookie, set at each successful sign-in. The client
address is the connection's, or, behind a proxy listed in REPLYGUARD_TRUSTED_PROXIES, the one
that proxy forwarded (entrypoints/web/__init__.py); never a header anyone can send."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.nav import HOME
from replyguard.entrypoints.web.security import (
    DEVICE_COOKIE,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Guards,
    Viewer,
    same_secret,
    set_cookie,
)
from replyguard.service_layer.workspace.accounts import sign_in
from replyguard.service_layer.workspace.login_throttle import DEVICE_LIFE
from replyguard.service_layer.workspace.web_sessions import LONGEST, close_session, open_session


def safe_next(target: str | None) -> str:
    """Only a path of this site: never `//evil.test` or `https://...` (an open redirect)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return HOME


def client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(include_in_schema=False)

    def login_page(request: Request, *, error: str = "", email: str = "", status: int = 200) -> Response:
        token = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)
        response = ctx.renderer.page(
            request,
            "login.html",
            {
                "login_token": token,
                "error": error,
                "email": email,
                "next": safe_next(request.query_params.get("next")),
            },
            status=status,
        )
        set_cookie(ctx, request, response, LOGIN_COOKIE, token, max_age=3600)
        return response

    @routes.get("/login")
    def login_form(request: Request) -> Response:
        return login_page(request)

    @routes.post("/login")
    def login(
        request: Request,
        email: Annotated[str, Form(max_length=320)] = "",
        password: Annotated[str, Form(max_length=2048)] = "",
        login_token: Annotated[str, Form(max_length=200)] = "",
        next: Annotated[str, Form(max_length=2000)] = HOME,
    ) -> Response:
        cookie = request.cookies.get(LOGIN_COOKIE, "")
        if not cookie or not same_secret(login_token, cookie):
            return login_page(request, error="Your sign-in form expired. Please try again.", status=403)
        ip, agent = client_ip(request), request.headers.get("user-agent", "")
        with ctx.scoped.installation(write=True) as uow:
            outcome = sign_in(
                uow, email, password, ip, ctx.settings.login, device=request.cookies.get(DEVICE_COOKIE, "")
            )
            session = open_session(uow, outcome.user, user_agent=agent, ip=ip) if outcome.user else None
            uow.commit()
        if outcome.limited_for is not None:
            seconds = int(outcome.limited_for.total_seconds()) + 1
            wait = f"{seconds} seconds" if seconds < 120 else f"{round(seconds / 60)} minutes"
            response = login_page(
                request, error=f"Too many failed sign-ins. Try again in {wait}.", email=email, status=429
            )
            response.headers["Retry-After"] = str(seconds)
            return response
        if session is None or outcome.user is None:
            return login_page(request, error="Wrong email or password.", email=email, status=401)
        target = "/account" if outcome.user.must_change_password else safe_next(next)
        response = RedirectResponse(target, status_code=303)
        set_cookie(
            ctx, request, response, SESSION_COOKIE, session.token, max_age=int(LONGEST.total_seconds())
        )
        set_cookie(
            ctx, request, response, DEVICE_COOKIE, outcome.device, max_age=int(DEVICE_LIFE.total_seconds())
        )
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    @routes.post("/logout")
    def logout(request: Request, _who: Annotated[Viewer, Depends(guards.csrf)]) -> Response:
        with ctx.scoped.installation(write=True) as uow:
            close_session(uow, request.cookies.get(SESSION_COOKIE, ""))
            uow.commit()
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @routes.get("/")
    def home(_who: Annotated[Viewer, Depends(guards.viewer)]) -> Response:
        return RedirectResponse(HOME, status_code=303)

    return routes
