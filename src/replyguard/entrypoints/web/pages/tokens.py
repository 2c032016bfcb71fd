"""API tokens: create (the secret is shown once, on the page that answers the form) with a
scope no wider than one's own rights and an optional expiry; list; revoke (with every token
made from it). A person sees their own tokens; an admin sees everybody's."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability, Level
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.workspace.api_tokens import TokenError, create_token, list_tokens, revoke_token

#: The expiry choices of the form, in days ("" for none).
EXPIRIES = (
    ("", "Never"),
    ("7", "In 7 days"),
    ("30", "In 30 days"),
    ("90", "In 90 days"),
    ("365", "In a year"),
)


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Maker = Annotated[Viewer, Depends(guards.page(Capability.TOKENS))]

    def render(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            tokens = list_tokens(uow, who.principal)
        scopes = [lv.label for lv in Level if lv <= who.principal.level]
        context = {"error": "", "secret": None, "created": None, **extra}
        context.update(viewer=who, active="settings", tokens=tokens, scopes=scopes, expiries=EXPIRIES)
        return ctx.renderer.page(request, "tokens.html", context, status=status)

    @routes.get("/settings/tokens")
    def tokens_page(request: Request, who: Who) -> Response:
        return render(request, who)

    @routes.post("/settings/tokens")
    def new_token(
        request: Request,
        who: Maker,
        name: Annotated[str, Form(max_length=200)] = "",
        scope: Annotated[str, Form(max_length=10)] = "read",
        expires_in: Annotated[str, Form(max_length=4)] = "",
    ) -> Response:
        try:
            level = Level.parse(scope)
            days = int(expires_in) if expires_in else None
            if days is not None and not 1 <= days <= 3660:
                raise TokenError("the expiry must be from 1 day to 10 years")
            expires = ctx.app.clock.now() + timedelta(days=days) if days else None
            with ctx.scoped.write(who.workspace_id) as uow:
                view, secret = create_token(uow, name, who.principal, scope=level, expires_at=expires)
                uow.commit()
        except (TokenError, ValueError) as exc:
            return render(request, who, error=str(exc), status=400)
        return render(request, who, secret=secret, created=view)

    @routes.post("/settings/tokens/{token_id}/revoke")
    def revoke(who: Maker, token_id: ObjectId) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            view = revoke_token(uow, token_id, who.principal)
            uow.commit()
        flash(ctx, who, f"Token {view.name} revoked, with every token made from it.")
        return RedirectResponse("/settings/tokens", status_code=303)

    return routes
