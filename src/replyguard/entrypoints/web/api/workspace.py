"""/api/v1: who am I, activity of every campaign, and the workspace's API tokens."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.api_tokens import TokenError, create_token, list_tokens, revoke_token
from replyguard.service_layer.queries.charts import reply_activity


class NewToken(BaseModel):
    name: str = Field(min_length=1, max_length=100)


class CreatedToken(BaseModel):
    token: s.Token
    secret: str = Field(description="Shown this once; only its digest is stored")


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["workspace"])
    Token = Annotated[Caller, Depends(guards.caller)]

    @routes.get("/me", response_model=s.Me)
    def who_am_i(caller: Token) -> s.Me:
        return s.Me(workspace_id=caller.workspace_id, token_id=caller.token_id, token_name=caller.name)

    @routes.get("/activity", response_model=list[s.CampaignActivity])
    def activity_of_every_campaign(caller: Token, days: Annotated[int, Query(ge=1, le=366)] = 30) -> object:
        """Replies, out-of-office answers and bounces per day, for every campaign."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return reply_activity(uow, days=days)

    @routes.get("/tokens", response_model=list[s.Token])
    def list_api_tokens(caller: Token) -> object:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return list_tokens(uow)

    @routes.post("/tokens", response_model=CreatedToken, status_code=201)
    def create_api_token(caller: Token, body: NewToken) -> CreatedToken:
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                view, secret = create_token(uow, body.name, caller.actor)
                uow.commit()
        except TokenError as exc:
            raise HTTPException(422, str(exc)) from None
        return CreatedToken(token=s.Token.model_validate(view), secret=secret)

    @routes.post("/tokens/{token_id}/revoke", response_model=s.Token)
    def revoke_api_token(caller: Token, token_id: ObjectId) -> object:
        with ctx.scoped.write(caller.workspace_id) as uow:
            view = revoke_token(uow, token_id, caller.actor)
            uow.commit()
        return view

    return routes
