"""Bulk actions from the Leads page: enroll the chosen people in a campaign, stop them, or give
them to a user of the workspace. A plain form (row checkboxes, no JavaScript needed), like the
inbox's bulk triage; the work is `service_layer/workspace/lead_bulk.py`'s, one transaction per
chunk, each lead under the single-lead rules. Stop cannot be undone by itself: its box must be
ticked (the browser asks first without JavaScript, and the server refuses a stop without it)."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.workspace.lead_bulk import MOST, assign_people, enroll_people, stop_people

ACTIONS = ("enroll", "stop", "assign")


def _back(target: str) -> str:
    """Back to the Leads page as it was (its search), never to another site."""
    return target if target.startswith("/leads") and not target.startswith("//") else "/leads"


def _people(count: int) -> str:
    return f"{count} {'person' if count == 1 else 'people'}"


def _skipped(skipped: list[tuple[str, str]]) -> str:
    shown = "; ".join(f"{who}: {why}" for who, why in skipped[:5])
    more = f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""
    return f"Skipped {len(skipped)}: {shown}{more}"


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Actor = Annotated[Viewer, Depends(guards.page(Capability.LEADS))]

    @routes.post("/leads/bulk")
    def bulk_leads(
        who: Actor,
        action: Annotated[str, Form(max_length=20)] = "",
        ids: Annotated[list[str] | None, Form()] = None,
        campaign: Annotated[str, Form(max_length=200)] = "",
        product: Annotated[str, Form(max_length=200)] = "",
        owner: Annotated[str, Form(max_length=320)] = "",
        sure: Annotated[str, Form(max_length=5)] = "",
        back: Annotated[str, Form(max_length=2000)] = "/leads",
    ) -> Response:
        to = _back(back)
        chosen = sorted({int(i) for i in (ids or []) if i.isdigit() and len(i) < 19})

        def said(text: str, kind: str = "ok") -> Response:
            flash(ctx, who, text, kind)
            return RedirectResponse(to, status_code=303)

        if action not in ACTIONS:
            return said(f"unknown action {action[:20]!r}", "error")
        if not chosen:
            return said("Choose the people first (the boxes at the start of each row).", "warn")
        if len(chosen) > MOST:
            return said(f"At most {MOST} people at once; {len(chosen)} were chosen.", "error")
        new_uow = lambda: ctx.scoped.write(who.workspace_id)  # noqa: E731
        try:
            if action == "enroll":
                if not campaign:
                    return said("Choose the campaign to enroll them in.", "error")
                report = enroll_people(new_uow, campaign, chosen)
                said(f"{report.enrolled} enrolled in {campaign}; {report.already} already were.")
                skipped = report.skipped
            elif action == "stop":
                if sure != "1":
                    return said("Nothing stopped: tick the box that says no more emails go to them.", "error")
                moved = stop_people(
                    new_uow, chosen, product=product or None, by=who.email, why="stopped from the Leads page"
                )
                leads = f"{moved.changed} lead{'s' if moved.changed != 1 else ''}"
                said(f"{leads} stopped ({_people(len(chosen))}).")
                skipped = moved.skipped
            else:
                if not owner:
                    return said("Choose the user to give them to.", "error")
                given = assign_people(new_uow, chosen, owner, by=who.email)
                said(f"{_people(given.changed)} given to {owner}.")
                skipped = given.skipped
        except LookupError as exc:
            return said(str(exc), "error")
        if skipped:
            flash(ctx, who, _skipped(skipped), "warn")
        return RedirectResponse(to, status_code=303)

    return routes
