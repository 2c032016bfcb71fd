"""Who is asking: the session of a page request, the token of an API request; and the form
(CSRF) check of every unsafe page request.

Pages: the `rg_session` cookie (HttpOnly, SameSite=Lax, Secure over https) names a server-side
session (service_layer/web_sessions.py) that carries the session's form token; every POST,
PUT, PATCH or DELETE to a page must send that token (form field `csrf_token` or header
`X-CSRF-Token`). The API: `Authorization: Bearer rg_...` only; it reads no cookie, so a
browser visiting another site cannot use it on anybody's behalf, and needs no form token.
"""

# No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run
# time, and they name locals of `make_guards`.

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException
from starlette.requests import Request
from starlette.responses import Response

from replyguard.entrypoints.web.context import WebContext
from replyguard.service_layer.api_tokens import find_token, touch_token
from replyguard.service_layer.web_sessions import SessionView, find_session, touch

SESSION_COOKIE = "rg_session"
LOGIN_COOKIE = "rg_login"  # the double-submit token of the sign-in form (no session yet)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"


class LoginRequired(Exception):
    """No live session: the page answers with a redirect to /login."""


class CsrfRefused(Exception):
    """An unsafe page request without this session's form token."""


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person of a page request."""

    user_id: int
    email: str
    name: str
    workspace_id: int
    workspace: str
    csrf_token: str
    session_id: int

    @classmethod
    def of(cls, s: SessionView) -> "Viewer":
        return cls(s.user_id, s.email, s.name, s.workspace_id, s.workspace, s.csrf_token, s.session_id)


@dataclass(frozen=True, slots=True)
class Caller:
    """The API token of an API request."""

    token_id: int
    workspace_id: int
    name: str

    @property
    def actor(self) -> str:
        return f"api token {self.name}"


@dataclass(frozen=True, slots=True)
class Guards:
    viewer: Callable[..., Viewer]
    csrf: Callable[..., Awaitable[Viewer]]
    caller: Callable[..., Caller]


def same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def secure_cookies(ctx: WebContext, request: Request) -> bool:
    mode = ctx.settings.cookie_secure
    return mode == "always" or (mode == "auto" and request.url.scheme == "https")


def set_cookie(
    ctx: WebContext, request: Request, response: Response, name: str, value: str, max_age: int
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="lax",
        secure=secure_cookies(ctx, request),
    )


def make_guards(ctx: WebContext) -> Guards:
    scoped = ctx.scoped

    def viewer(request: Request) -> Viewer:
        token = request.cookies.get(SESSION_COOKIE, "")
        with scoped.installation() as uow:
            found = find_session(uow, token) if token else None
        if found is None:
            raise LoginRequired
        if found.touch_due:
            with scoped.write(found.workspace_id) as uow:
                touch(uow, found.session_id)
                uow.commit()
        who = Viewer.of(found)
        request.state.viewer = who
        return who

    async def csrf(request: Request, who: Annotated[Viewer, Depends(viewer)]) -> Viewer:
        if request.method in SAFE_METHODS:
            return who
        given = request.headers.get(CSRF_HEADER)
        if given is None:
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > ctx.settings.max_upload_bytes:
                raise HTTPException(413, "upload too large")
            form = await request.form()
            field = form.get(CSRF_FIELD)
            given = field if isinstance(field, str) else ""
        if not given or not same_secret(given, who.csrf_token):
            raise CsrfRefused
        return who

    def caller(request: Request) -> Caller:
        scheme, _, secret = request.headers.get("authorization", "").partition(" ")
        found = None
        if scheme.lower() == "bearer" and secret.strip():
            with scoped.installation() as uow:
                found = find_token(uow, secret.strip())
        if found is None:
            raise HTTPException(
                401,
                "a valid API token is required",
                headers={"WWW-Authenticate": 'Bearer realm="replyguard"'},
            )
        if found.touch_due:
            with scoped.write(found.workspace_id) as uow:
                touch_token(uow, found.token_id)
                uow.commit()
        return Caller(found.token_id, found.workspace_id, found.name)

    return Guards(viewer, csrf, caller)
