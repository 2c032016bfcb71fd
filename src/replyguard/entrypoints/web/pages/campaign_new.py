"""Creating a campaign: from its TOML file (uploaded or pasted) or from a form that writes
the same TOML (domain/campaign_form.py). The form picks an existing product or names a new
one on purpose (entrypoints/web/products.py); the file names its product, as the CLI's."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, UploadFile
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.domain.campaign_form import CampaignFields, StepFields, campaign_toml
from replyguard.domain.campaign_spec import CampaignSpecError
from replyguard.domain.schedule import DAY_NAMES
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.products import BadProduct, picked_product
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.entrypoints.web.uploads import read_upload
from replyguard.service_layer.queries.products import product_names
from replyguard.service_layer.workspace.campaigns import check_campaign_file, create_campaign

FORM_STEPS = 5


def form_fields(form: FormData) -> tuple[CampaignFields, dict[str, Any]]:
    """The campaign form's fields, and what to fill the form with again on an error."""
    values = {k: v[:20000] for k, v in form.multi_items() if isinstance(v, str)}
    days = [d for d in form.getlist("days") if isinstance(d, str) and d in DAY_NAMES]
    steps = [
        StepFields(
            values.get(f"step{i}_wait", ""),
            values.get(f"step{i}_subject", ""),
            values.get(f"step{i}_body", ""),
            bool(values.get(f"step{i}_approval")),
        )
        for i in range(1, FORM_STEPS + 1)
    ]
    names = ("product", "name", "mailbox", "from_name", "owner", "timezone")
    product, name, mailbox, from_name, owner, zone = (values.get(n, "") for n in names)
    fields = CampaignFields(
        product, name, mailbox, from_name, owner, zone, days,
        values.get("start", ""), values.get("end", ""), values.get("daily_cap", ""), steps,
    )  # fmt: skip
    return fields, {**values, "days": days}


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.CAMPAIGNS))]

    def render_new(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            products = product_names(uow)
        context = {"error": "", "source": "", "tab": "toml", "form": {}, **extra}
        context.update(viewer=who, active="campaigns", days=DAY_NAMES, step_slots=range(1, FORM_STEPS + 1))
        context.update(products=products)
        return ctx.renderer.page(request, "campaign_new.html", context, status=status)

    def create(request: Request, who: Viewer, source: str, **again: Any) -> Response:
        try:
            # Every template is trial-rendered here, with no transaction open (issue 21).
            with ctx.trial_renders:
                checked = check_campaign_file(lambda: ctx.scoped.read(who.workspace_id), source)
            with ctx.scoped.write(who.workspace_id) as uow:
                created = create_campaign(uow, checked)
                uow.commit()
        except CampaignSpecError as exc:
            return render_new(request, who, error=str(exc), source=source, status=400, **again)
        if created.created:
            flash(ctx, who, "Campaign created. Enroll leads below.")
        else:
            flash(ctx, who, "An identical campaign already existed: nothing changed.", "warn")
        return RedirectResponse(f"/campaigns/{created.campaign_id}", status_code=303)

    @routes.get("/campaigns/new")
    def new_campaign_page(request: Request, who: Who, tab: str = "toml") -> Response:
        return render_new(request, who, tab="form" if tab == "form" else "toml")

    @routes.post("/campaigns/new")
    def create_from_toml(
        request: Request,
        who: Who,
        source: Annotated[str, Form(max_length=200_000)] = "",
        file: Annotated[UploadFile | None, File()] = None,
    ) -> Response:
        text = source
        if file is not None and file.filename:
            data = read_upload(file, ctx.settings.max_upload_bytes)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                error = f"{file.filename}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                return render_new(request, who, error=error, status=400)
        if not text.strip():
            return render_new(
                request, who, error="Paste a campaign file or choose one to upload.", status=400
            )
        return create(request, who, text, tab="toml")

    def create_from_fields(
        request: Request, who: Viewer, fields: CampaignFields, again: dict[str, Any]
    ) -> Response:
        try:
            with ctx.scoped.read(who.workspace_id) as uow:
                product, _new = picked_product(uow, fields.product, str(again.get("new_product", "")))
        except BadProduct as exc:
            return render_new(request, who, error=str(exc), tab="form", form=again, status=400)
        return create(request, who, campaign_toml(replace(fields, product=product)), tab="form", form=again)

    @routes.post("/campaigns/new/form")
    async def create_from_form(request: Request, who: Who) -> Response:
        fields, again = form_fields(await request.form())
        return await run_in_threadpool(create_from_fields, request, who, fields, again)

    return routes
