"""The audit page: the history of `replyguard audit` runs with each row's evidence, and the
latest `--config` findings. Audits are started by the CLI (or cron), never from here: a run
sends real email to the team's canary address."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer
from replyguard.service_layer.queries import audit as aq


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]

    @routes.get("/audit")
    def audit_page(request: Request, who: Who) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            overview = aq.audit_overview(uow)
        context = {"viewer": who, "active": "audit", "o": overview}
        return ctx.renderer.page(request, "audit.html", context)

    @routes.get("/audit/{run_id}")
    def audit_run_page(request: Request, who: Who, run_id: ObjectId) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            report = aq.run_detail(uow, run_id)
        context = {"viewer": who, "active": "audit", "r": report}
        return ctx.renderer.page(request, "audit_run.html", context)

    return routes
