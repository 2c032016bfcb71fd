"""Campaign pages: the list, a campaign's page (steps with their bodies and what each did, a
step previewed for a chosen lead, the queue by state, sends per day against the cap, replies
per day), approving waiting steps, enrolling. Creating one: `campaign_new.py`; pausing,
archiving, editing and test sends: `campaign_actions.py`."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.charts import activity_chart, sends_chart
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import BodyId, ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.queries import campaigns as q
from replyguard.service_layer.queries.charts import reply_activity
from replyguard.service_layer.rescue.approvals import approve_in_campaign
from replyguard.service_layer.workspace.bulk import enroll_in_chunks
from replyguard.service_layer.workspace.enrollment import EnrollReport
from replyguard.service_layer.workspace.rendering import RenderFailed
from replyguard.service_layer.workspace.step_preview import Preview, preview_step


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Approver = Annotated[Viewer, Depends(guards.page(Capability.APPROVE))]
    Enroller = Annotated[Viewer, Depends(guards.page(Capability.LEADS))]

    def render_campaign(
        request: Request,
        who: Viewer,
        campaign_id: int,
        state: str,
        page: int,
        preview: Preview | str | None = None,
        **extra: Any,
    ) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            counts = q.step_counts(uow, campaign_id)  # read once: the tabs' and the steps' figures
            detail = q.campaign_detail(uow, campaign_id, counts=counts)
            # No tab asked for: the first one with steps in it (an empty tab told nothing).
            state = state if state in q.QUEUE else q.first_busy_state(detail.queue)
            queue = q.campaign_queue(uow, campaign_id, state, page=max(1, page))
            stats = {s.position: s for s in q.step_stats(uow, campaign_id, counts=counts)}
            choices = q.lead_choices(uow, campaign_id)
            reasons = q.cancel_reasons(uow, campaign_id) if state == "cancelled" else None
            sends = q.sends_per_day(uow, campaign_id)
            activity = reply_activity(uow, days=30, campaign_id=campaign_id)[0]
        context = {"enroll": None, **extra}
        context.update(
            viewer=who,
            active="campaigns",
            c=detail,
            state=state,
            queue_states=q.QUEUE,
            queue=queue,
            reasons=reasons,
            sends=sends,
            sends_chart=sends_chart(sends),
            activity=activity,
            activity_chart=activity_chart(activity),
            stats=stats,
            lead_choices=choices,
            preview=preview,
        )
        return ctx.renderer.page(request, "campaign.html", context)

    @routes.get("/campaigns")
    def campaigns_page(request: Request, who: Who) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            rows = q.list_campaigns(uow)
        context = {"viewer": who, "active": "campaigns", "campaigns": rows}
        return ctx.renderer.page(request, "campaigns.html", context)

    @routes.get("/campaigns/{campaign_id}")
    def campaign_page(
        request: Request,
        who: Who,
        campaign_id: ObjectId,
        state: str = "",
        page: int = 1,
        step: Annotated[int, Query(ge=1, le=1000)] | None = None,
        lead: Annotated[str, Query(max_length=20)] = "",
    ) -> Response:
        preview: Preview | str | None = None
        if step is not None:
            lead_id = int(lead) if lead.isdigit() and 0 < int(lead) < 2**63 else None
            try:
                with ctx.scoped.read(who.workspace_id) as uow:
                    preview = preview_step(uow, campaign_id, step, lead_id)
            except (LookupError, RenderFailed) as exc:
                preview = f"Step {step} cannot be shown for this lead: {exc}"
        return render_campaign(request, who, campaign_id, state, page, preview)

    @routes.post("/campaigns/{campaign_id}/approve")
    def approve(
        who: Approver,
        campaign_id: ObjectId,
        step_id: Annotated[list[BodyId], Form()] = [],  # noqa: B006 (FastAPI copies defaults)
        scope: Annotated[str, Form(max_length=20)] = "",
    ) -> Response:
        every = scope == "all"
        with ctx.scoped.write(who.workspace_id) as uow:
            count = approve_in_campaign(
                uow, campaign_id, approver=who.email, step_ids=None if every else step_id
            )
            uow.commit()
        flash(ctx, who, f"{count} step{'' if count == 1 else 's'} approved.")
        return RedirectResponse(f"/campaigns/{campaign_id}?state=awaiting_approval", status_code=303)

    @routes.post("/campaigns/{campaign_id}/enroll")
    def enroll(
        request: Request,
        who: Enroller,
        campaign_id: ObjectId,
        email: Annotated[str, Form(max_length=320)] = "",
    ) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            name = q.campaign_detail(uow, campaign_id).name
        try:
            report = enroll_in_chunks(lambda: ctx.scoped.write(who.workspace_id), name, email.strip() or None)
        except (LookupError, ValueError) as exc:  # an unknown lead, or not an address at all
            report = EnrollReport(skipped=[(email.strip(), str(exc))])
        return render_campaign(request, who, campaign_id, "scheduled", 1, enroll=report)

    return routes
