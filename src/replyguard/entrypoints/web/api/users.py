"""/api/v1/users, for tokens with admin rights: the users page of the web as an API. A new user
or a reset password comes back once in the answer, temporary: the person chooses their own at
their next sign-in. Role rules as on the page: only an owner's token acts on owners."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from replyguard.domain.access import ROLES, Capability, Role
from replyguard.domain.passwords import temporary_password
from replyguard.entrypoints.web.api.schemas import Model
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace import account_admin as admin
from replyguard.service_layer.workspace.accounts import AccountError, UserView, add_user, get_user, view

_ROLE = f"^({'|'.join(ROLES)})$"


class User(Model):
    id: int
    email: str
    name: str
    role: str = Field(description=", ".join(ROLES))
    disabled: bool
    must_change_password: bool
    created_at: datetime
    last_login_at: datetime | None


class NewUser(BaseModel):
    email: str = Field(min_length=3, max_length=320)
    name: str = Field(default="", max_length=200)
    role: str = Field(default="member", pattern=_ROLE)


class RoleChange(BaseModel):
    role: str = Field(pattern=_ROLE)


class UserWithPassword(BaseModel):
    user: User
    temporary_password: str = Field(description="Shown this once; the person replaces it at sign-in")


def _fields(found: UserView) -> dict[str, object]:
    return {name: getattr(found, name) for name in User.model_fields} | {"role": found.role.value}


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["users"])
    Admin = Annotated[Caller, Depends(guards.api(Capability.USERS))]

    def act(caller: Caller, what: Callable[[UnitOfWork], UserView]) -> User:
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                found = what(uow)
                uow.commit()
        except AccountError as exc:
            raise HTTPException(409, str(exc)) from None
        return User.model_validate(_fields(found))

    @routes.get("/users", response_model=list[User])
    def list_users(caller: Admin) -> list[User]:
        with ctx.scoped.read(caller.workspace_id) as uow:
            rows = admin.user_rows(uow, ctx.settings.login)
        return [User.model_validate(_fields(r.user)) for r in rows]

    @routes.post("/users", response_model=UserWithPassword, status_code=201)
    def add(caller: Admin, body: NewUser) -> UserWithPassword:
        password = temporary_password()
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                found = add_user(
                    uow, body.email, password, name=body.name, role=Role(body.role),
                    by=caller.principal, temporary=True,
                )  # fmt: skip
                uow.commit()
        except AccountError as exc:
            raise HTTPException(422, str(exc)) from None
        return UserWithPassword(user=User.model_validate(_fields(found)), temporary_password=password)

    @routes.post("/users/{user_id}/role", response_model=User)
    def set_role(caller: Admin, user_id: ObjectId, body: RoleChange) -> User:
        return act(caller, lambda uow: admin.set_role(uow, user_id, Role(body.role), caller.principal))

    @routes.post("/users/{user_id}/disable", response_model=User)
    def disable(caller: Admin, user_id: ObjectId) -> User:
        """Signed out everywhere and every token acting for them revoked, now."""
        return act(caller, lambda uow: admin.disable_user(uow, user_id, caller.principal))

    @routes.post("/users/{user_id}/enable", response_model=User)
    def enable(caller: Admin, user_id: ObjectId) -> User:
        return act(caller, lambda uow: admin.enable_user(uow, user_id, caller.principal))

    @routes.post("/users/{user_id}/remove", status_code=204)
    def remove(caller: Admin, user_id: ObjectId) -> None:
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                admin.remove_user(uow, user_id, caller.principal)
                uow.commit()
        except AccountError as exc:
            raise HTTPException(409, str(exc)) from None

    @routes.post("/users/{user_id}/reset-password", response_model=UserWithPassword)
    def reset(caller: Admin, user_id: ObjectId) -> UserWithPassword:
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                done = admin.reset_password(uow, user_id, caller.principal)
                uow.commit()
        except AccountError as exc:
            raise HTTPException(409, str(exc)) from None
        return UserWithPassword(
            user=User.model_validate(_fields(done.user)), temporary_password=done.password
        )

    @routes.post("/users/{user_id}/sign-out", response_model=User)
    def sign_out(caller: Admin, user_id: ObjectId) -> User:
        def change(uow: UnitOfWork) -> UserView:
            admin.sign_out_everywhere(uow, user_id, caller.principal)
            return view(get_user(uow, user_id))

        return act(caller, change)

    @routes.post("/users/{user_id}/unlock", response_model=User)
    def unlock(caller: Admin, user_id: ObjectId) -> User:
        def change(uow: UnitOfWork) -> UserView:
            admin.unlock(uow, user_id, caller.principal)
            return view(get_user(uow, user_id))

        return act(caller, change)

    return routes
