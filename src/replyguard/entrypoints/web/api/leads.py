"""/api/v1/leads: search, import a CSV, bulk enroll/stop/assign, one lead with its timeline."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, UploadFile

from replyguard.domain.access import Capability
from replyguard.domain.leads_csv import LeadFileError, read_leads
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId, PageNumber, PerPage
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.entrypoints.web.uploads import read_upload
from replyguard.service_layer.queries import leads as q
from replyguard.service_layer.queries.products import ProductNotFound, require_product
from replyguard.service_layer.workspace.bulk import import_in_chunks
from replyguard.service_layer.workspace.lead_bulk import assign_people, enroll_people, stop_people

LeadState = Literal["active", "replied", "out_of_office", "held", "bounced", "unsubscribed", "stopped"]


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["leads"])
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Importer = Annotated[Caller, Depends(guards.api(Capability.LEADS))]

    @routes.get("/leads", response_model=s.PageOf[s.LeadRow])
    def search_leads(
        caller: Token,
        q_: Annotated[str, Query(alias="q", max_length=200)] = "",
        state: LeadState | None = None,
        page: PageNumber = 1,
        per_page: PerPage = 50,
    ) -> object:
        """Leads whose address, name or company contains `q`, newest first."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.search_leads(uow, q_, state=state, page=page, per_page=per_page)

    @routes.post("/leads/import", response_model=s.Imported)
    def import_leads_csv(
        caller: Importer,
        product: Annotated[str, Form(min_length=1, max_length=200)],
        file: Annotated[UploadFile, File(description="CSV with an email column")],
        create_product: Annotated[
            bool, Form(description="Create the product if there is none of that name (else: 422)")
        ] = False,
    ) -> s.Imported:
        """Import a CSV as leads of a product, which must exist unless `create_product`: a typo
        never becomes a new product. Bad rows are skipped and listed with their line."""
        product = " ".join(product.split())
        if not product:
            raise HTTPException(422, "product: a name is required")
        if not create_product:
            try:
                with ctx.scoped.read(caller.workspace_id) as uow:
                    require_product(uow, product)
            except ProductNotFound as exc:
                raise HTTPException(422, f"{exc}: check the name, or send create_product=true") from None
        try:
            rows = list(read_leads(read_upload(file, ctx.settings.max_upload_bytes)))
        except LeadFileError as exc:
            raise HTTPException(422, str(exc)) from None
        report = import_in_chunks(lambda: ctx.scoped.write(caller.workspace_id), product, rows)
        errors = [s.RowError(line=e.line, message=e.message) for e in report.errors]
        return s.Imported(created=report.created, updated=report.updated, errors=errors)

    @routes.post("/leads/bulk", response_model=s.LeadsBulkDone)
    def bulk_leads(caller: Importer, body: s.LeadsBulk) -> s.LeadsBulkDone:
        """What the Leads page's bulk form does: enroll the people's leads of the campaign's
        product, stop their leads (of `product`, else all), or make `owner` their owner —
        each lead under the single-lead rules, skipped ones with the reason. A person not of
        this workspace: 404, before anything is written."""
        new_uow = lambda: ctx.scoped.write(caller.workspace_id)  # noqa: E731
        try:
            if body.action == "enroll":
                if not body.campaign:
                    raise HTTPException(422, "campaign: enroll needs the campaign")
                enrolled = enroll_people(new_uow, body.campaign, body.people)
                changed, already, skipped = enrolled.enrolled, enrolled.already, enrolled.skipped
            elif body.action == "stop":
                moved = stop_people(
                    new_uow, body.people, product=body.product or None, by=caller.actor, why="stopped in bulk"
                )
                changed, already, skipped = moved.changed, 0, moved.skipped
            else:
                if not body.owner:
                    raise HTTPException(422, "owner: assign needs a user's address")
                given = assign_people(new_uow, body.people, body.owner, by=caller.actor)
                changed, already, skipped = given.changed, 0, given.skipped
        except LookupError as exc:
            raise HTTPException(404, str(exc)) from None
        gone = [s.Skipped(email=who, why=why) for who, why in skipped]
        return s.LeadsBulkDone(changed=changed, already=already, skipped=gone)

    @routes.get("/leads/{lead_id}", response_model=s.Lead)
    def get_lead(caller: Token, lead_id: ObjectId) -> q.LeadDetail:
        """The lead, its contact, its other products, its steps and its timeline."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.lead_detail(uow, lead_id)

    @routes.get("/leads/{lead_id}/timeline", response_model=list[s.TimelineEntry])
    def lead_timeline(caller: Token, lead_id: ObjectId) -> list[q.TimelineEntry]:
        """Every event of the contact's leads, across products, newest first."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.lead_detail(uow, lead_id).timeline

    return routes
