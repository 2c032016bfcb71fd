"""What a person does to a campaign from its page: pause, resume and archive it, edit its file
(the differences and what they do, then a confirmation: `campaign update`'s flow), and send
one step to themselves as a test.

Archiving cannot be undone: its form has a box to tick (`required`, so the browser keeps the
form until it is ticked, with JavaScript off too) and the server refuses the post without it.
A test send goes to the signed-in person's address as the session knows it: no field of the
form names a recipient, and none is read.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.states import IllegalTransition
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries import campaigns as q
from replyguard.service_layer.workspace.campaign_changes import Change, apply_update, plan_update
from replyguard.service_layer.workspace.campaign_status import set_campaign_status
from replyguard.service_layer.workspace.campaigns import check_campaign, custom_fields
from replyguard.service_layer.workspace.step_preview import SendTestRefused, send_test

_DONE = {"pause": "Campaign paused: nothing more is sent until it is resumed.",
         "resume": "Campaign resumed: its queued emails go out in the send window.",
         "archive": "Campaign archived: {n} queued email{s} cancelled."}  # fmt: skip


def back(campaign_id: int, anchor: str = "") -> Response:
    return RedirectResponse(f"/campaigns/{campaign_id}{anchor}", status_code=303)


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    routes.include_router(_status_routes(ctx, guards))
    routes.include_router(_edit_routes(ctx, guards))
    return routes


def _status_routes(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Editor = Annotated[Viewer, Depends(guards.page(Capability.CAMPAIGNS))]

    def change_status(who: Viewer, campaign_id: int, action: str) -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                done = set_campaign_status(uow, campaign_id, action, by=who.email)
                uow.commit()
        except IllegalTransition as exc:
            flash(ctx, who, f"Nothing changed: {exc}.", "error")
            return back(campaign_id)
        n = done.cancelled
        flash(ctx, who, _DONE[action].format(n=n, s="" if n == 1 else "s"))
        return back(campaign_id)

    @routes.post("/campaigns/{campaign_id}/pause")
    def pause(who: Editor, campaign_id: ObjectId) -> Response:
        return change_status(who, campaign_id, "pause")

    @routes.post("/campaigns/{campaign_id}/resume")
    def resume(who: Editor, campaign_id: ObjectId) -> Response:
        return change_status(who, campaign_id, "resume")

    @routes.post("/campaigns/{campaign_id}/archive")
    def archive(
        who: Editor, campaign_id: ObjectId, sure: Annotated[str, Form(max_length=10)] = ""
    ) -> Response:
        if sure != "1":
            flash(ctx, who, "Nothing changed: tick the box to archive the campaign.", "error")
            return back(campaign_id)
        return change_status(who, campaign_id, "archive")

    @routes.post("/campaigns/{campaign_id}/test-send")
    def test_send(
        who: Editor,
        campaign_id: ObjectId,
        position: Annotated[int, Form(ge=1, le=1000)],
        lead: Annotated[str, Form(max_length=20)] = "",
    ) -> Response:
        lead_id = int(lead) if lead.isdigit() and 0 < int(lead) < 2**63 else None
        app = ctx.app_for(who.workspace_id)
        try:
            sent = send_test(app, campaign_id, position, lead_id, to=who.email, by=who.email)
        except NotFound:
            raise  # another workspace's campaign, or none: the 404 page
        except (SendTestRefused, LookupError) as exc:
            flash(ctx, who, f"No test sent: {exc}.", "error")
            return back(campaign_id, "#steps")
        if sent.outcome == "accepted":
            flash(ctx, who, f"Test of step {position} sent to {sent.recipient}: “{sent.subject}”.")
        else:
            flash(
                ctx,
                who,
                f"The test of step {position} was not accepted ({sent.outcome}): {sent.detail}",
                "error",
            )
        return back(campaign_id, "#steps")

    return routes


def _edit_routes(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Editor = Annotated[Viewer, Depends(guards.page(Capability.CAMPAIGNS))]

    def render_edit(
        request: Request, who: Viewer, campaign_id: int, source: str, *, status: int = 200, **extra: Any
    ) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            detail = q.campaign_detail(uow, campaign_id)
        context = {"error": "", "plan": None, "shown": "", **extra}
        context.update(viewer=who, active="campaigns", c=detail, source=source or detail.source)
        return ctx.renderer.page(request, "campaign_edit.html", context, status=status)

    @routes.get("/campaigns/{campaign_id}/edit")
    def edit_page(request: Request, who: Editor, campaign_id: ObjectId) -> Response:
        return render_edit(request, who, campaign_id, "")

    @routes.post("/campaigns/{campaign_id}/edit")
    def edit(
        request: Request,
        who: Editor,
        campaign_id: ObjectId,
        source: Annotated[str, Form(max_length=200_000)] = "",
        shown: Annotated[str, Form(max_length=400_000)] = "",
        confirm: Annotated[str, Form(max_length=10)] = "",
    ) -> Response:
        text = source.replace("\r\n", "\n")
        try:
            with ctx.scoped.read(who.workspace_id) as uow:
                name = q.campaign_detail(uow, campaign_id).name
                fields = custom_fields(uow)
            # Every template is trial-rendered here, with no transaction open (issue 21).
            with ctx.trial_renders:
                checked = check_campaign(text, fields)
            named = parse_campaign(checked.source, set(fields), trial=False).name
            if named != name:  # before anything is compared with the campaign the file names
                raise CampaignSpecError(
                    f"campaign.name: this page edits {name!r}; the file names {named!r}"
                    " (a campaign keeps its name: create a new one for another)"
                )
            with ctx.scoped.read(who.workspace_id) as uow:
                plan = plan_update(uow, checked)
            if not plan.changes:
                flash(ctx, who, "Nothing to change: the file is the campaign as it is.")
                return back(campaign_id)
            if confirm != "1":
                listed = json.dumps([[c.what, c.before, c.after] for c in plan.changes])
                return render_edit(request, who, campaign_id, text, plan=plan, shown=listed)
            with ctx.scoped.write(who.workspace_id) as uow:
                done = apply_update(uow, checked, shown=_changes(shown))
                uow.commit()
        except (CampaignSpecError, LookupError) as exc:
            return render_edit(request, who, campaign_id, text, error=str(exc), status=400)
        changed, again = len(done.changes), done.rendered_again
        flash(ctx, who, f"Campaign updated: {changed} change(s); {again} queued emails rendered again.")
        return back(campaign_id)

    return routes


def _changes(shown: str) -> list[Change]:
    """The changes the confirmation page listed, as the form carried them back."""
    try:
        rows = json.loads(shown)
        return [Change(str(what), str(before), str(after)) for what, before, after in rows]
    except (ValueError, TypeError):
        raise CampaignSpecError("the confirmation was incomplete: look at the differences again") from None
