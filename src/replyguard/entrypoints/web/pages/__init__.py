"""Server-rendered pages. Every router here but the sign-in one checks the session and, on
unsafe methods, the form token (see `routers`); every route declares the capability it needs
(`guards.page(Capability.X)`, domain/access.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.pages import (
    account,
    audit,
    auth,
    campaign_actions,
    campaign_new,
    campaigns,
    inbound,
    inbox_bulk,
    leads,
    leads_bulk,
    mailbox_oauth,
    mailboxes,
    reports,
    thread_presence,
    threads,
    tokens,
    users,
)
from replyguard.entrypoints.web.security import Guards


def routers(ctx: WebContext, guards: Guards) -> list[APIRouter]:
    protected = APIRouter(dependencies=[Depends(guards.csrf)], include_in_schema=False)
    modules = (
        threads,
        inbox_bulk,
        thread_presence,
        campaign_new,
        campaign_actions,
        campaigns,
        leads,
        leads_bulk,
        inbound,
        mailboxes,
        mailbox_oauth,
        reports,
        audit,
        tokens,
        users,
        account,
    )
    for module in modules:
        protected.include_router(module.router(ctx, guards))
    return [auth.router(ctx, guards), protected]
