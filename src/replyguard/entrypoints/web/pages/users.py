"""Users of the workspace, for admins: add one (with a temporary password shown once), change
a role, disable (a rep who left: signed out at their next request, tokens dead at once),
enable, remove, reset a password, end someone's sessions, lift their sign-in limits."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import ROLES, Capability, Role
from replyguard.domain.passwords import temporary_password
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace import account_admin as admin
from replyguard.service_layer.workspace.accounts import AccountError, add_user, get_user


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Admin = Annotated[Viewer, Depends(guards.page(Capability.USERS))]

    def render(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            rows = admin.user_rows(uow, ctx.settings.login)
        context: dict[str, Any] = {"error": "", "handed": None, **extra}
        context.update(
            viewer=who, active="users", rows=rows, roles=ROLES, limit=ctx.settings.login.per_account
        )
        return ctx.renderer.page(request, "users.html", context, status=status)

    def act(request: Request, who: Viewer, user_id: int, what: Callable[[UnitOfWork], str]) -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                said = what(uow)
                uow.commit()
        except AccountError as exc:
            return render(request, who, error=str(exc), status=409)
        flash(ctx, who, said)
        return RedirectResponse("/settings/users", status_code=303)

    @routes.get("/settings/users")
    def users_page(request: Request, who: Admin) -> Response:
        return render(request, who)

    @routes.post("/settings/users")
    def add(
        request: Request,
        who: Admin,
        email: Annotated[str, Form(max_length=320)] = "",
        name: Annotated[str, Form(max_length=200)] = "",
        role: Annotated[str, Form(max_length=20)] = "member",
    ) -> Response:
        password = temporary_password()
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                user = add_user(
                    uow, email, password, name=name, role=Role.parse(role), by=who.principal, temporary=True
                )
                uow.commit()
        except (AccountError, ValueError) as exc:
            return render(request, who, error=str(exc), status=400)
        return render(request, who, handed=(user.email, password, "added"))

    @routes.post("/settings/users/{user_id}/role")
    def set_role(
        request: Request, who: Admin, user_id: ObjectId, role: Annotated[str, Form(max_length=20)] = ""
    ) -> Response:
        try:
            new = Role.parse(role)
        except ValueError as exc:
            return render(request, who, error=str(exc), status=400)

        def change(uow: UnitOfWork) -> str:
            user = admin.set_role(uow, user_id, new, who.principal)
            return f"{user.email} is now {user.role.value}."

        return act(request, who, user_id, change)

    @routes.post("/settings/users/{user_id}/disable")
    def disable(request: Request, who: Admin, user_id: ObjectId) -> Response:
        def change(uow: UnitOfWork) -> str:
            user = admin.disable_user(uow, user_id, who.principal)
            return f"{user.email} is disabled: signed out everywhere, their API tokens revoked."

        return act(request, who, user_id, change)

    @routes.post("/settings/users/{user_id}/enable")
    def enable(request: Request, who: Admin, user_id: ObjectId) -> Response:
        def change(uow: UnitOfWork) -> str:
            return f"{admin.enable_user(uow, user_id, who.principal).email} may sign in again."

        return act(request, who, user_id, change)

    @routes.post("/settings/users/{user_id}/remove")
    def remove(request: Request, who: Admin, user_id: ObjectId) -> Response:
        def change(uow: UnitOfWork) -> str:
            return f"{admin.remove_user(uow, user_id, who.principal)} was removed."

        return act(request, who, user_id, change)

    @routes.post("/settings/users/{user_id}/reset-password")
    def reset(request: Request, who: Admin, user_id: ObjectId) -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                done = admin.reset_password(uow, user_id, who.principal)
                uow.commit()
        except AccountError as exc:
            return render(request, who, error=str(exc), status=409)
        return render(request, who, handed=(done.user.email, done.password, "reset"))

    @routes.post("/settings/users/{user_id}/sign-out")
    def sign_out(request: Request, who: Admin, user_id: ObjectId) -> Response:
        def change(uow: UnitOfWork) -> str:
            ended = admin.sign_out_everywhere(uow, user_id, who.principal)
            return f"{get_user(uow, user_id).email}: {ended} session{'' if ended == 1 else 's'} ended."

        return act(request, who, user_id, change)

    @routes.post("/settings/users/{user_id}/unlock")
    def unlock(request: Request, who: Admin, user_id: ObjectId) -> Response:
        def change(uow: UnitOfWork) -> str:
            admin.unlock(uow, user_id, who.principal)
            return f"{get_user(uow, user_id).email} may try to sign in again from anywhere."

        return act(request, who, user_id, change)

    return routes
