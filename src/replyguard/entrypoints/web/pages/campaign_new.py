"""Creating a campaign: from its TOML file (uploaded or pasted) or from a form that writes
the same TOML (domain/campaign_form.py). The form picks an existing product or names a new
one on purpose (entrypoints/web/products.py), and an existing mailbox (whose own settings it
shows and uses) or a new one; it has as many step rows as needed ("Add a step" posts the form
back one row longer, with JavaScript off too). The file names its product, as the CLI's."""

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
from replyguard.service_layer.queries.mailboxes import list_mailboxes
from replyguard.service_layer.queries.products import product_names
from replyguard.service_layer.workspace.campaigns import (
    MailboxDisagrees,
    check_campaign_file,
    create_campaign,
)

#: Step rows a new form starts with, and the most a form may have ("Add a step" adds one).
FORM_STEPS = 2
MAX_FORM_STEPS = 50
#: The mailbox picker's "a new mailbox" choice (no address can be this).
NEW_MAILBOX = " new "


def step_count(values: dict[str, str]) -> int:
    """How many step rows the form had: its `steps` field, or the highest row it carried."""
    stated = values.get("steps", "")
    rows = [
        int(k[4:].split("_")[0]) for k in values if k.startswith("step") and k[4:].split("_")[0].isdigit()
    ]
    count = int(stated) if stated.isdigit() else max(rows, default=FORM_STEPS)
    return min(max(count, 1), MAX_FORM_STEPS)


def form_fields(form: FormData) -> tuple[CampaignFields, dict[str, Any]]:
    """The campaign form's fields, and what to fill the form with again on an error."""
    values = {k: v[:20000] for k, v in form.multi_items() if isinstance(v, str)}
    days = [d for d in form.getlist("days") if isinstance(d, str) and d in DAY_NAMES]
    count = step_count(values)
    steps = [
        StepFields(
            values.get(f"step{i}_wait", ""),
            values.get(f"step{i}_subject", ""),
            values.get(f"step{i}_body", ""),
            bool(values.get(f"step{i}_approval")),
        )
        for i in range(1, count + 1)
    ]
    names = ("product", "name", "mailbox", "from_name", "owner", "timezone")
    product, name, mailbox, from_name, owner, zone = (values.get(n, "") for n in names)
    cap = values.get("daily_cap", "")
    picked = values.get("mailbox_pick", NEW_MAILBOX)
    if picked != NEW_MAILBOX:
        # An existing mailbox: its own sender name and cap apply (shown on the form), so the
        # file states none and can never disagree with them.
        mailbox, from_name, cap = picked, "", ""
    fields = CampaignFields(
        product, name, mailbox, from_name, owner, zone, days,
        values.get("start", ""), values.get("end", ""), cap, steps,
    )  # fmt: skip
    return fields, {**values, "days": days, "steps": count}


def web_words(exc: CampaignSpecError) -> str:
    """A file's error as a person on the web reads it: an existing mailbox's settings, every
    one that differs at once and what to do here (the CLI's message names a command)."""
    if not isinstance(exc, MailboxDisagrees):
        return str(exc)
    names = {"from_name": "From name", "daily_cap": "daily cap", "timezone": "time zone"}
    said = "; ".join(
        f"{names[key]} is {current!r} (this campaign says {stated!r})"
        for key, (current, stated) in exc.differ.items()
    )
    shared = f", used by {', '.join(repr(u) for u in exc.shared_with)}" if exc.shared_with else ""
    return (
        f"The mailbox {exc.mailbox} already exists with its own settings{shared}: {said}. A mailbox has"
        " one set of settings for all its campaigns: choose it in the form's mailbox picker to use"
        " them, or leave these settings out of the file."
    )


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.CAMPAIGNS))]

    def render_new(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            products = product_names(uow)
            mailboxes = list_mailboxes(uow)
        context = {"error": "", "source": "", "tab": "toml", "form": {}, **extra}
        form = context["form"]
        slots = int(form.get("steps", FORM_STEPS)) if isinstance(form, dict) else FORM_STEPS
        context.update(viewer=who, active="campaigns", days=DAY_NAMES, step_slots=range(1, slots + 1))
        context.update(
            products=products, mailboxes=mailboxes, NEW_MAILBOX=NEW_MAILBOX, max_steps=MAX_FORM_STEPS
        )
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
            return render_new(request, who, error=web_words(exc), source=source, status=400, **again)
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
        form = await request.form()
        fields, again = form_fields(form)
        if form.get("more"):  # "Add a step": the same form again, one row longer, nothing created
            again["steps"] = min(int(again["steps"]) + 1, MAX_FORM_STEPS)
            return await run_in_threadpool(render_new, request, who, tab="form", form=again)
        return await run_in_threadpool(create_from_fields, request, who, fields, again)

    return routes
