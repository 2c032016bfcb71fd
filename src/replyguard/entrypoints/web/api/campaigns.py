"""/api/v1/campaigns: list, create from TOML, read, the queue, sends per day, activity,
per-step counts, approve waiting steps, enroll, pause, resume, archive."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from replyguard.domain.access import Capability
from replyguard.domain.campaign_spec import CampaignSpecError
from replyguard.domain.states import IllegalTransition
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId, PageNumber, PerPage
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.queries import campaigns as q
from replyguard.service_layer.queries.charts import first_action, reply_activity
from replyguard.service_layer.rescue.approvals import approve_in_campaign
from replyguard.service_layer.workspace.bulk import enroll_in_chunks
from replyguard.service_layer.workspace.campaign_status import (
    CampaignArchived,
    StatusChanged,
    set_campaign_status,
)
from replyguard.service_layer.workspace.campaigns import CampaignCreated, check_campaign_file, create_campaign

QueueState = Literal[
    "scheduled", "awaiting_approval", "held", "sending", "sent", "cancelled", "failed", "unknown"
]


def _create(ctx: WebContext, workspace_id: int, source: str) -> CampaignCreated:
    # Every template is trial-rendered first, with no transaction open (issue 21).
    with ctx.trial_renders:
        checked = check_campaign_file(lambda: ctx.scoped.read(workspace_id), source)
    with ctx.scoped.write(workspace_id) as uow:
        created = create_campaign(uow, checked)
        uow.commit()
    return created


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["campaigns"])
    routes.include_router(_status_routes(ctx, guards))
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Creator = Annotated[Caller, Depends(guards.api(Capability.CAMPAIGNS))]
    Approver = Annotated[Caller, Depends(guards.api(Capability.APPROVE))]

    @routes.get("/campaigns", response_model=list[s.CampaignRow])
    def list_campaigns(caller: Token) -> list[q.CampaignRow]:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.list_campaigns(uow)

    @routes.post("/campaigns", response_model=s.CampaignCreated, status_code=201)
    def create_campaign_from_toml(caller: Creator, body: s.CampaignSource) -> object:
        """Create a campaign from its TOML file. An identical file again changes nothing."""
        try:
            created = _create(ctx, caller.workspace_id, body.toml)
        except CampaignSpecError as exc:
            raise HTTPException(422, str(exc)) from None
        return created

    @routes.get("/campaigns/{campaign_id}", response_model=s.Campaign)
    def get_campaign(caller: Token, campaign_id: ObjectId) -> q.CampaignDetail:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.campaign_detail(uow, campaign_id)

    @routes.get("/campaigns/{campaign_id}/queue", response_model=s.PageOf[s.QueueRow])
    def campaign_queue(
        caller: Token,
        campaign_id: ObjectId,
        state: QueueState = "awaiting_approval",
        page: PageNumber = 1,
        per_page: PerPage = 50,
    ) -> object:
        """The campaign's steps in one queue state ("sending" includes claimed steps; "held": the
        queued steps of leads that wait for a person or for their return)."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.campaign_queue(uow, campaign_id, state, page=page, per_page=per_page)

    @routes.get("/campaigns/{campaign_id}/cancel-reasons", response_model=s.CancelReasons)
    def cancel_reasons(caller: Token, campaign_id: ObjectId) -> q.CancelReasons:
        """Why the latest cancelled steps were cancelled (`complete`: all of them were counted)."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.cancel_reasons(uow, campaign_id)

    @routes.get("/campaigns/{campaign_id}/sends-per-day", response_model=s.SendsPerDay)
    def sends_per_day(
        caller: Token, campaign_id: ObjectId, days: Annotated[int, Query(ge=1, le=90)] = 14
    ) -> q.SendsPerDay:
        """Sends per day of the campaign and of its mailbox, against the mailbox's cap."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.sends_per_day(uow, campaign_id, days=days)

    @routes.get("/campaigns/{campaign_id}/activity", response_model=s.CampaignActivity)
    def campaign_activity(
        caller: Token, campaign_id: ObjectId, days: Annotated[int, Query(ge=1, le=366)] = 30
    ) -> object:
        """Replies, out-of-office answers and bounces per day."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return reply_activity(uow, days=days, campaign_id=campaign_id)[0]

    @routes.get("/campaigns/{campaign_id}/first-action", response_model=s.FirstAction)
    def campaign_first_action(
        caller: Token, campaign_id: ObjectId, days: Annotated[int, Query(ge=1, le=366)] = 30
    ) -> s.FirstAction:
        """Time from a reply to a person's first action on its thread (a decision or an answer
        sent), for replies of the last `days` days; and how many still wait."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            found = first_action(uow, days=days, campaign_id=campaign_id)[0]
        return s.FirstAction(
            campaign_id=found.campaign_id,
            campaign=found.campaign,
            product=found.product,
            acted=found.acted,
            waiting=found.waiting,
            median_seconds=found.median_seconds,
            p90_seconds=found.p90_seconds,
            oldest_waiting_seconds=found.oldest_waiting_seconds,
            buckets=[s.Bucket(label=label, count=n) for label, n in found.buckets],
        )

    @routes.post("/campaigns/{campaign_id}/approve", response_model=s.Approved)
    def approve_steps(caller: Approver, campaign_id: ObjectId, body: s.Approve) -> s.Approved:
        """Approve waiting steps: the listed ones, or all (optionally only at one position)."""
        with ctx.scoped.write(caller.workspace_id) as uow:
            count = approve_in_campaign(
                uow, campaign_id, approver=caller.actor, step_ids=body.step_ids, position=body.position
            )
            uow.commit()
        return s.Approved(approved=count)

    return routes


def _status_routes(ctx: WebContext, guards: Guards) -> APIRouter:
    """Per-step counts, enrolling, pausing, resuming and archiving."""
    routes = APIRouter()
    Enroller = Annotated[Caller, Depends(guards.api(Capability.LEADS))]
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Creator = Annotated[Caller, Depends(guards.api(Capability.CAMPAIGNS))]

    @routes.get("/campaigns/{campaign_id}/step-stats", response_model=list[s.StepStats])
    def campaign_step_stats(caller: Token, campaign_id: ObjectId) -> list[q.StepStats]:
        """Per step: emails sent, and the leads whose reply, absence note or bounce came after
        it (each counted once per kind), with the reply rate."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.step_stats(uow, campaign_id)

    def change_status(caller: Caller, campaign_id: int, action: str) -> StatusChanged:
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                done = set_campaign_status(uow, campaign_id, action, by=caller.actor)
                uow.commit()
        except IllegalTransition as exc:
            raise HTTPException(409, str(exc)) from None
        return done

    @routes.post("/campaigns/{campaign_id}/pause", response_model=s.CampaignStatus)
    def pause_campaign(caller: Creator, campaign_id: ObjectId) -> StatusChanged:
        """Pause: nothing of the campaign is sent until it is resumed (queued emails wait)."""
        return change_status(caller, campaign_id, "pause")

    @routes.post("/campaigns/{campaign_id}/resume", response_model=s.CampaignStatus)
    def resume_campaign(caller: Creator, campaign_id: ObjectId) -> StatusChanged:
        """Resume a paused campaign: its queued emails go out in the send window."""
        return change_status(caller, campaign_id, "resume")

    @routes.post("/campaigns/{campaign_id}/archive", response_model=s.CampaignStatus)
    def archive_campaign(caller: Creator, campaign_id: ObjectId) -> StatusChanged:
        """Archive, for good: every queued email is cancelled; no new leads, no changes."""
        return change_status(caller, campaign_id, "archive")

    @routes.post("/campaigns/{campaign_id}/enroll", response_model=s.Enrolled)
    def enroll_leads(caller: Enroller, campaign_id: ObjectId, body: s.Enroll) -> s.Enrolled:
        """Enroll the product's leads not yet in the campaign (or one lead by email)."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            name = q.campaign_detail(uow, campaign_id).name
        try:
            report = enroll_in_chunks(lambda: ctx.scoped.write(caller.workspace_id), name, body.email)
        except CampaignArchived as exc:
            raise HTTPException(409, str(exc)) from None
        except LookupError as exc:
            raise HTTPException(404, str(exc)) from None
        except ValueError as exc:  # not an email address
            raise HTTPException(422, str(exc)) from None
        skipped = [s.Skipped(email=e, why=w) for e, w in report.skipped]
        return s.Enrolled(enrolled=report.enrolled, already=report.already, skipped=skipped)

    return routes
