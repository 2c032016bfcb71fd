"""Triage from the inbox: the same decision on several threads at once (assign to me, snooze,
done), from the row checkboxes or one keystroke on the current row (app.js). Each thread is
its own decision in its own transaction, through `decisions.decide` like the thread page's
buttons: one refused (someone else closed it meanwhile) leaves the others done, and the
banner says which."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.entrypoints.web.thread_actions import BadDecision, decision_request
from replyguard.service_layer.rescue.decisions import DecisionError, ThreadNotFound, decide

#: What a row checkbox may ask for, and the decision it is.
BULK = {"assign_me": "assign", "snooze": "snooze", "done": "done"}
MOST = 200  # threads in one request: a page of the inbox is 50


def _back(target: str) -> str:
    """Back to the inbox as it was (its filters), never to another site."""
    return target if target.startswith("/inbox") and not target.startswith("//") else "/inbox"


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Actor = Annotated[Viewer, Depends(guards.page(Capability.THREADS))]
    settings = ctx.app.settings

    @routes.post("/inbox/bulk")
    def bulk_decide(
        request: Request,
        who: Actor,
        action: Annotated[str, Form(max_length=20)] = "",
        ids: Annotated[list[str] | None, Form()] = None,
        until_at: Annotated[str, Form(max_length=40)] = "",
        back: Annotated[str, Form(max_length=2000)] = "/inbox",
    ) -> Response:
        to = _back(back)
        chosen = sorted({int(i) for i in (ids or []) if i.isdigit()})[:MOST]
        if action not in BULK:
            flash(ctx, who, f"unknown action {action[:20]!r}", "error")
            return RedirectResponse(to, status_code=303)
        if not chosen:
            flash(ctx, who, "Choose the threads first (the boxes at the start of each row).", "warn")
            return RedirectResponse(to, status_code=303)
        try:
            decision = decision_request(
                BULK[action], who.email, ctx.app.clock.now(), until_at=until_at, to=who.email
            )
        except BadDecision as exc:
            flash(ctx, who, str(exc), "error")
            return RedirectResponse(to, status_code=303)
        done, refused = [], []
        for thread_id in chosen:
            try:
                with ctx.scoped.write(who.workspace_id) as uow:
                    decide(uow, thread_id, decision, settings)
                    uow.commit()
                done.append(thread_id)
            except (ThreadNotFound, DecisionError, LookupError) as exc:
                refused.append(f"#{thread_id}: {exc}")
        verb = {"assign_me": "assigned to you", "snooze": "snoozed", "done": "done"}[action]
        if done:
            flash(ctx, who, f"{len(done)} thread{'s' if len(done) != 1 else ''} {verb}.")
        if refused:
            flash(ctx, who, "Not changed: " + "; ".join(refused[:5]), "error")
        return RedirectResponse(to, status_code=303)

    return routes
