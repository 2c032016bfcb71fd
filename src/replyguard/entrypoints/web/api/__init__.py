"""The REST API under /api/v1: JSON in and out, `Authorization: Bearer` tokens, every call
scoped to the token's workspace. An object of another workspace is a 404, like one that does
not exist. Every route declares the capability it needs (`guards.api(Capability.X)`): a token
whose rights are short of it gets a 403."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from replyguard.entrypoints.web.api import (
    campaigns,
    inbound,
    leads,
    mailboxes,
    operations,
    threads,
    users,
    workspace,
)
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import Guards

PREFIX = "/api/v1"
_ERRORS: dict[int | str, dict[str, str]] = {
    401: {"description": "No valid API token"},
    403: {"description": "The token's rights (its scope, capped by its person's role) are short"},
    404: {"description": "No such object in this workspace"},
}


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    api = APIRouter(prefix=PREFIX, dependencies=[Depends(guards.caller)], responses=_ERRORS)
    for module in (threads, campaigns, leads, inbound, mailboxes, operations, workspace, users):
        api.include_router(module.router(ctx, guards))
    return api
