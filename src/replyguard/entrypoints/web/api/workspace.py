"""/api/v1: who am I, activity of every campaign, and the workspace's API tokens.

A token may make tokens (with `write` or `admin` rights), never with more rights than its own
nor living longer; the tokens it makes die with it."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from replyguard.domain.access import Capability, Level
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.queries.charts import reply_activity
from replyguard.service_layer.workspace.accounts import get_user
from replyguard.service_layer.workspace.api_tokens import TokenError, create_token, list_tokens, revoke_token


class NewToken(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    scope: str = Field(default="read", pattern="^(read|write|admin)$", description="at most this token's own")
    expires_at: datetime | None = Field(
        default=None, description="optional; never later than this token's own expiry"
    )


class CreatedToken(BaseModel):
    token: s.Token
    secret: str = Field(description="Shown this once; only its digest is stored")


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["workspace"])
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Maker = Annotated[Caller, Depends(guards.api(Capability.TOKENS))]

    @routes.get("/me", response_model=s.Me)
    def who_am_i(caller: Token) -> s.Me:
        user = None
        if caller.token is not None and caller.token.user_id is not None:
            with ctx.scoped.read(caller.workspace_id) as uow:
                user = get_user(uow, caller.token.user_id).email
        return s.Me(
            workspace_id=caller.workspace_id,
            token_id=caller.token_id,
            token_name=caller.name,
            scope=caller.token.scope.label if caller.token else caller.level.label,
            rights=caller.level.label,
            user=user,
            expires_at=caller.token.expires_at if caller.token else None,
        )

    @routes.get("/activity", response_model=list[s.CampaignActivity])
    def activity_of_every_campaign(caller: Token, days: Annotated[int, Query(ge=1, le=366)] = 30) -> object:
        """Replies, out-of-office answers and bounces per day, for every campaign."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return reply_activity(uow, days=days)

    @routes.get("/tokens", response_model=list[s.Token])
    def list_api_tokens(caller: Token) -> object:
        """This token and the tokens it made; with admin rights, every token of the workspace."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return list_tokens(uow, caller.principal)

    @routes.post("/tokens", response_model=CreatedToken, status_code=201)
    def create_api_token(caller: Maker, body: NewToken) -> CreatedToken:
        """A token made by this one: never more rights, never a longer life, dead with it."""
        expires = body.expires_at
        if expires is not None and expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)  # a time without a zone is UTC, as elsewhere
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                view, secret = create_token(
                    uow, body.name, caller.principal, scope=Level.parse(body.scope), expires_at=expires
                )
                uow.commit()
        except TokenError as exc:
            raise HTTPException(422, str(exc)) from None
        return CreatedToken(token=s.Token.model_validate(view), secret=secret)

    @routes.post("/tokens/{token_id}/revoke", response_model=s.Token)
    def revoke_api_token(caller: Maker, token_id: ObjectId) -> object:
        """Revoke a token and every token made from it (this token's own line; any, with admin
        rights)."""
        with ctx.scoped.write(caller.workspace_id) as uow:
            view = revoke_token(uow, token_id, caller.principal)
            uow.commit()
        return view

    return routes
