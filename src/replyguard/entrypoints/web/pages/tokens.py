"""API tokens of the workspace: create (the secret is shown once, on the page that answers
the form), list, revoke."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer
from replyguard.service_layer.api_tokens import TokenError, create_token, list_tokens, revoke_token


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.viewer)]

    def render(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            tokens = list_tokens(uow)
        context = {"error": "", "secret": None, "created": None, **extra}
        context.update(viewer=who, active="settings", tokens=tokens)
        return ctx.renderer.page(request, "tokens.html", context, status=status)

    @routes.get("/settings/tokens")
    def tokens_page(request: Request, who: Who) -> Response:
        return render(request, who)

    @routes.post("/settings/tokens")
    def new_token(request: Request, who: Who, name: Annotated[str, Form(max_length=200)] = "") -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                view, secret = create_token(uow, name, who.email)
                uow.commit()
        except TokenError as exc:
            return render(request, who, error=str(exc), status=400)
        return render(request, who, secret=secret, created=view)

    @routes.post("/settings/tokens/{token_id}/revoke")
    def revoke(who: Who, token_id: ObjectId) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            revoke_token(uow, token_id, who.email)
            uow.commit()
        return RedirectResponse("/settings/tokens", status_code=303)

    return routes
