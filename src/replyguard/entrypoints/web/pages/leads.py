"""Lead pages: the list of people with search (one row per person, their products in it; the
bulk actions are `leads_bulk.py`'s), the lead page (its timeline across products), and the
CSV import with the same line-numbered errors as `replyguard leads import`."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, UploadFile
from starlette.requests import Request
from starlette.responses import Response

from replyguard.domain.access import Capability
from replyguard.domain.leads_csv import LeadFileError, read_leads, write_csv
from replyguard.domain.states import ReplyState
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.products import BadProduct, picked_product
from replyguard.entrypoints.web.security import Guards, Viewer
from replyguard.entrypoints.web.uploads import read_upload
from replyguard.service_layer.queries.leads import (
    EXPORT_HEADER,
    export_rows,
    lead_detail,
    list_leads,
)
from replyguard.service_layer.queries.people import bulk_choices, search_people
from replyguard.service_layer.queries.products import product_names
from replyguard.service_layer.workspace.bulk import import_in_chunks


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Importer = Annotated[Viewer, Depends(guards.page(Capability.LEADS))]

    @routes.get("/leads")
    def leads_page(request: Request, who: Who, q: str = "", state: str = "", page: int = 1) -> Response:
        state = state if state in set(ReplyState) else ""
        with ctx.scoped.read(who.workspace_id) as uow:
            found = search_people(uow, q[:200], state=state or None, page=max(1, page))
            choices = bulk_choices(uow) if who.can(Capability.LEADS) else None
        context = {"viewer": who, "active": "leads", "q": q, "state": state, "states": list(ReplyState)}
        back = str(request.url.path) + (f"?{request.url.query}" if request.url.query else "")
        return ctx.renderer.page(
            request, "leads.html", {**context, "people": found, "choices": choices, "back": back}
        )

    @routes.get("/leads/export.csv")
    def export_leads(who: Who, state: str = "") -> Response:
        """Every lead (in a reply state) as a CSV file, formula-safe for spreadsheets."""
        state = state if state in set(ReplyState) else ""
        with ctx.scoped.read(who.workspace_id) as uow:
            rows = export_rows(list_leads(uow, state=state or None))
        return Response(
            write_csv(EXPORT_HEADER, rows),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="leads.csv"'},
        )

    def render_import(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            products = product_names(uow)
        context = {"error": "", "report": None, "product": "", "new_product": "", "filename": "", **extra}
        context.update(viewer=who, active="leads", products=products)
        return ctx.renderer.page(request, "leads_import.html", context, status=status)

    @routes.get("/leads/import")
    def import_page(request: Request, who: Importer) -> Response:
        return render_import(request, who)

    @routes.post("/leads/import")
    def import_leads_file(
        request: Request,
        who: Importer,
        product: Annotated[str, Form(max_length=200)] = "",
        new_product: Annotated[str, Form(max_length=200)] = "",
        file: Annotated[UploadFile | None, File()] = None,
    ) -> Response:
        again = {"product": product, "new_product": new_product}
        try:
            with ctx.scoped.read(who.workspace_id) as uow:
                name, _create = picked_product(uow, product, new_product)
        except BadProduct as exc:
            return render_import(request, who, error=str(exc), status=400, **again)
        if file is None or not file.filename:
            return render_import(request, who, error="Choose a CSV file to import.", status=400, **again)
        data = read_upload(file, ctx.settings.max_upload_bytes)
        try:
            rows = list(read_leads(data))
        except LeadFileError as exc:
            error = f"{file.filename}: {exc}"
            return render_import(request, who, error=error, status=400, **again)
        report = import_in_chunks(lambda: ctx.scoped.write(who.workspace_id), name, rows)
        return render_import(request, who, report=report, product=name, filename=file.filename)

    @routes.get("/leads/{lead_id}")
    def lead_page(request: Request, who: Who, lead_id: ObjectId) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            detail = lead_detail(uow, lead_id)
        return ctx.renderer.page(request, "lead.html", {"viewer": who, "active": "leads", "d": detail})

    return routes
