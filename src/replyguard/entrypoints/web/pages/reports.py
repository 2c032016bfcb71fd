"""Reports: replies, out-of-office answers and bounces per day, and the time from a reply to
a person's first action on its thread, for every campaign."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.charts import activity_chart, first_action_chart
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import Guards, Viewer
from replyguard.service_layer.queries.charts import first_action, reply_activity


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]

    @routes.get("/reports")
    def reports_page(request: Request, who: Who, days: int = 30) -> Response:
        days = min(max(days, 7), 180)
        with ctx.scoped.read(who.workspace_id) as uow:
            activity = reply_activity(uow, days=days)
            acted = {f.campaign_id: f for f in first_action(uow, days=days)}
        charts = [
            (a, activity_chart(a), acted[a.campaign_id], first_action_chart(acted[a.campaign_id]))
            for a in activity
        ]
        context = {"viewer": who, "active": "reports", "charts": charts, "days": days}
        return ctx.renderer.page(request, "reports.html", context)

    return routes
