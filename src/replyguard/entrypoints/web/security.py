"""Who is asking: the session of a page request, the token of an API request; what they may do
(every route declares the capability it needs: `Guards.page(Capability.X)` for a page,
`Guards.api(Capability.X)` for the API, checked here and nowhere else); and the form (CSRF)
check of every unsafe page request.

Pages: the `rg_session` cookie (HttpOnly, SameSite=Lax, Secure over https) names a server-side
session (service_layer/workspace/web_sessions.py) that carries the session's form token; every POST,
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

from replyguard.domain.access import AccessDenied, Capability, Level, Principal, Role
from replyguard.entrypoints.web.context import WebContext
from replyguard.service_layer.workspace.api_tokens import TokenCaller, find_token, touch_token
from replyguard.service_layer.workspace.web_sessions import (
    Flash,
    SessionView,
    add_flash,
    find_session,
    take_flash,
    touch,
)

SESSION_COOKIE = "rg_session"
LOGIN_COOKIE = "rg_login"  # the double-submit token of the sign-in form (no session yet)
DEVICE_COOKIE = "rg_device"  # a browser that signed in before (service_layer/workspace/login_throttle.py)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"


class LoginRequired(Exception):
    """No live session: the page answers with a redirect to /login."""


class CsrfRefused(Exception):
    """An unsafe page request without this session's form token."""


class PasswordChangeRequired(Exception):
    """The person's password was reset: they choose their own before anything else."""


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
    role: Role = Role.MEMBER
    must_change_password: bool = False

    @classmethod
    def of(cls, s: SessionView) -> "Viewer":
        return cls(
            s.user_id, s.email, s.name, s.workspace_id, s.workspace, s.csrf_token, s.session_id, s.role,
            s.must_change_password,
        )  # fmt: skip

    @property
    def principal(self) -> Principal:
        return Principal(self.email, self.role.level, self.role, self.user_id)

    def can(self, capability: str) -> bool:
        """For templates: show a button only to whom it would work for."""
        return self.principal.can(Capability(capability))


@dataclass(frozen=True, slots=True)
class Caller:
    """The API token of an API request."""

    token_id: int
    workspace_id: int
    name: str
    level: Level = Level.READ
    token: TokenCaller | None = None

    @property
    def actor(self) -> str:
        return f"api token {self.name}"

    @property
    def principal(self) -> Principal:
        if self.token is None:
            return Principal(self.actor, self.level, Role.ADMIN, None, self.token_id)
        return self.token.principal


class PageNeeds:
    """A page's dependency: the signed-in person, who must have `capability`. The route walk
    (tests/web/test_tenant_isolation.py) finds these on every route."""

    def __init__(self, capability: Capability) -> None:
        self.capability = capability

    def check(self, who: Viewer) -> Viewer:
        if who.must_change_password and self.capability is not Capability.ACCOUNT:
            raise PasswordChangeRequired
        if not who.principal.can(self.capability):
            raise AccessDenied(
                f"your role ({who.role.value}) cannot do this: it needs {self.capability.level.label} rights"
            )
        return who


class ApiNeeds:
    """An API route's dependency: the token, whose scope (capped by its person's role) must
    allow `capability`."""

    def __init__(self, capability: Capability) -> None:
        self.capability = capability

    def check(self, caller: Caller) -> Caller:
        if caller.level < self.capability.level:
            raise AccessDenied(
                f"this token has {caller.level.label} rights; {self.capability.value} needs"
                f" {self.capability.level.label}"
            )
        return caller


@dataclass(frozen=True, slots=True)
class Guards:
    viewer: Callable[..., Viewer]
    csrf: Callable[..., Awaitable[Viewer]]
    caller: Callable[..., Caller]
    page: Callable[[Capability], Callable[..., Viewer]]
    api: Callable[[Capability], Callable[..., Caller]]
    optional_viewer: Callable[[Request], Viewer | None]


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

    def lookup(request: Request) -> SessionView | None:
        token = request.cookies.get(SESSION_COOKIE, "")
        with scoped.installation() as uow:
            found = find_session(uow, token) if token else None
        if found is not None and found.touch_due:
            with scoped.write(found.workspace_id) as uow:
                touch(uow, found.session_id)
                uow.commit()
        return found

    def show_flash(request: Request, found: SessionView) -> None:
        """The page rendered for this request shows the session's messages, then clears them
        (Renderer.page calls `flash_shown`): a redirect in between keeps them."""

        def shown() -> None:
            with scoped.write(found.workspace_id) as uow:
                take_flash(uow, found.session_id)
                uow.commit()

        request.state.flash = found.flash
        request.state.flash_shown = shown

    def viewer(request: Request) -> Viewer:
        found = lookup(request)
        if found is None:
            raise LoginRequired
        who = Viewer.of(found)
        request.state.viewer = who
        if found.flash:
            show_flash(request, found)
        return who

    def optional_viewer(request: Request) -> Viewer | None:
        """For error pages: the navigation when someone is signed in, never a redirect."""
        known = getattr(request.state, "viewer", None)
        if isinstance(known, Viewer):
            return known
        found = lookup(request)
        return Viewer.of(found) if found is not None else None

    csrf = _csrf_check(ctx, viewer)

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
        return Caller(found.token_id, found.workspace_id, found.name, found.level, found)

    return Guards(viewer, csrf, caller, _page_needs(viewer), _api_needs(caller), optional_viewer)


def _csrf_check(ctx: WebContext, viewer: Callable[..., Viewer]) -> Callable[..., Awaitable[Viewer]]:
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

    return csrf


def _page_needs(viewer: Callable[..., Viewer]) -> Callable[[Capability], Callable[..., Viewer]]:
    made: dict[Capability, Callable[..., Viewer]] = {}

    def page(capability: Capability) -> Callable[..., Viewer]:
        if capability not in made:
            needs = PageNeeds(capability)

            def check(who: Annotated[Viewer, Depends(viewer)]) -> Viewer:
                return needs.check(who)

            check.__dict__["needs"] = needs  # what the route walk reads
            made[capability] = check
        return made[capability]

    return page


def _api_needs(caller: Callable[..., Caller]) -> Callable[[Capability], Callable[..., Caller]]:
    made: dict[Capability, Callable[..., Caller]] = {}

    def api(capability: Capability) -> Callable[..., Caller]:
        if capability not in made:
            needs = ApiNeeds(capability)

            def check(who: Annotated[Caller, Depends(caller)]) -> Caller:
                return needs.check(who)

            check.__dict__["needs"] = needs
            made[capability] = check
        return made[capability]

    return api


def declared_capability(call: object) -> Capability | None:
    """The capability a dependency declares (`Guards.page` / `Guards.api`), if any."""
    needs = getattr(call, "__dict__", {}).get("needs")
    return needs.capability if isinstance(needs, PageNeeds | ApiNeeds) else None


def flash_of(request: Request) -> tuple[Flash, ...]:
    value = getattr(request.state, "flash", ())
    return value if isinstance(value, tuple) else ()


def flash(ctx: WebContext, who: Viewer, text: str, kind: str = "ok") -> None:
    """Say `text` on the next page this person sees (after the redirect that follows a form),
    once: the message lives in their session, never in the URL."""
    with ctx.scoped.write(who.workspace_id) as uow:
        add_flash(uow, who.session_id, text, kind)
        uow.commit()
