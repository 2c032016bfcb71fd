"""A person's own account: change their password (after an admin's reset they must, before
anything else), see where they are signed in, and end those sessions."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.nav import HOME
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.workspace.accounts import AccountError, change_password
from replyguard.service_layer.workspace.web_sessions import end_session, end_sessions, list_sessions


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Me = Annotated[Viewer, Depends(guards.page(Capability.ACCOUNT))]

    def render(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            sessions = list_sessions(uow, who.user_id)
        context: dict[str, Any] = {"error": "", **extra}
        context.update(viewer=who, active="account", sessions=sessions)
        return ctx.renderer.page(request, "account.html", context, status=status)

    @routes.get("/account")
    def account_page(request: Request, who: Me) -> Response:
        return render(request, who)

    @routes.post("/account/password")
    def new_password(
        request: Request,
        who: Me,
        current: Annotated[str, Form(max_length=2048)] = "",
        password: Annotated[str, Form(max_length=2048)] = "",
        confirm: Annotated[str, Form(max_length=2048)] = "",
    ) -> Response:
        if password != confirm:
            return render(request, who, error="The two new passwords differ.", status=400)
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                change_password(uow, who.user_id, current, password, keep_session=who.session_id)
                uow.commit()
        except AccountError as exc:
            return render(request, who, error=str(exc), status=400)
        flash(ctx, who, "Password changed. Your other sessions were signed out.")
        return RedirectResponse(HOME if who.must_change_password else "/account", status_code=303)

    @routes.post("/account/sessions/{session_id}/end")
    def end_one(who: Me, session_id: ObjectId) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            end_session(uow, who.user_id, session_id)
            uow.commit()
        if session_id == who.session_id:
            return RedirectResponse("/login", status_code=303)
        flash(ctx, who, "That session was signed out.")
        return RedirectResponse("/account", status_code=303)

    @routes.post("/account/sessions/end-others")
    def end_others(who: Me) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            ended = end_sessions(uow, who.user_id, keep=who.session_id)
            uow.commit()
        flash(ctx, who, f"{ended} other session{'' if ended == 1 else 's'} signed out.")
        return RedirectResponse("/account", status_code=303)

    return routes
