"""The audit page: the history of audit runs with each row's evidence, the latest `--config`
findings, and — for an admin — starting a run of the six checks on a campaign (`/audit/new`).

A run started here is recorded first (`service_layer/audit/web_runs.py`: one web run per
workspace at a time, enforced by the database) and carried out in a thread of this web process;
its page (`/audit/{id}`) shows the stage it is at and the six rows as they are judged, and
reloads itself while it runs (a Refresh link without JavaScript). A reload, another tab or a
second click finds the same run."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

import threading
from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.domain.audit import CHECKS
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.audit.canary import AuditSetupError
from replyguard.service_layer.audit.run import channel_names
from replyguard.service_layer.audit.web_runs import AuditBusy, carry_out, running_web_run, start_web_run
from replyguard.service_layer.queries import audit as aq
from replyguard.service_layer.queries.people import bulk_choices


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Auditor = Annotated[Viewer, Depends(guards.page(Capability.AUDIT))]

    @routes.get("/audit")
    def audit_page(request: Request, who: Who) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            overview = aq.audit_overview(uow)
            running = running_web_run(uow)
        context = {"viewer": who, "active": "audit", "o": overview, "running": running}
        return ctx.renderer.page(request, "audit.html", context)

    def render_new(
        request: Request, who: Viewer, *, error: str = "", status: int = 200, **form: str
    ) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            campaigns = bulk_choices(uow).campaigns
            running = running_web_run(uow)
        context = {"viewer": who, "active": "audit", "campaigns": campaigns, "running": running}
        context.update(error=error, campaign=form.get("campaign", ""), canary=form.get("canary", ""))
        return ctx.renderer.page(request, "audit_new.html", context, status=status)

    @routes.get("/audit/new")
    def new_audit_page(request: Request, who: Auditor) -> Response:
        return render_new(request, who)

    @routes.post("/audit/new")
    def start_audit(
        request: Request,
        who: Auditor,
        campaign: Annotated[str, Form(max_length=200)] = "",
        canary: Annotated[str, Form(max_length=320)] = "",
    ) -> Response:
        app = ctx.app_for(who.workspace_id)
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                run_id = start_web_run(uow, app, campaign, canary=canary.strip() or None, by=who.email)
                uow.commit()
        except AuditBusy as exc:
            flash(
                ctx,
                who,
                f"An audit started from here is already running (run {exc.run_id}): follow it below.",
                "warn",
            )
            return RedirectResponse(f"/audit/{exc.run_id}", status_code=303)
        except (AuditSetupError, LookupError) as exc:
            return render_new(request, who, error=str(exc), status=400, campaign=campaign, canary=canary)
        channels = channel_names(ctx.app.notify)
        worker = threading.Thread(
            target=carry_out,
            args=(app, run_id),
            kwargs={"channels": channels},
            name=f"audit-run-{run_id}",
            daemon=True,
        )
        worker.start()
        return RedirectResponse(f"/audit/{run_id}", status_code=303)

    @routes.get("/audit/{run_id}")
    def audit_run_page(request: Request, who: Who, run_id: ObjectId) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            report = aq.run_detail(uow, run_id)
        context = {"viewer": who, "active": "audit", "r": report, "checks": CHECKS}
        return ctx.renderer.page(request, "audit_run.html", context)

    return routes
