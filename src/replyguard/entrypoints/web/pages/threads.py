"""Reply Rescue in the browser: the inbox (the home page), a thread with its conversation,
draft and decisions, the decisions themselves, and a person's answer — sent only when they
press Send (`person_send.send_reply`; a double submit is one email)."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.sanitize import message_csp, sanitize_email_html
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.entrypoints.web.thread_actions import BadDecision, decision_request, forms_for
from replyguard.service_layer.queries import NotFound, Page
from replyguard.service_layer.queries import threads as tq
from replyguard.service_layer.queries.thread_page import thread_page
from replyguard.service_layer.rescue import presence
from replyguard.service_layer.rescue.decisions import (
    DecisionError,
    ThreadNotFound,
    VersionChanged,
    decide,
)
from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, SendResult, send_reply

_TEXT = 200  # longest filter value read from a URL
#: What a thread page shows when nothing was just done on it.
BLANK: dict[str, Any] = {
    "error": "",
    "changed": [],
    "kept": "",
}


def inbox_filter(
    state: str, product: str, campaign: str, intent: str, owner: str, kind: str, audit: bool, q: str = ""
) -> tq.InboxFilter:
    """The filter a URL asks for; anything unknown is simply not filtered on."""
    return tq.InboxFilter(
        q=" ".join(q[:_TEXT].split()) or None,
        state=state if state in tq.STATES else "open",
        product=product[:_TEXT] or None,
        campaign=campaign[:_TEXT] or None,
        intent=intent if intent in tq.INTENTS else None,
        owner=owner[:320] or None,
        kind=kind if kind in tq.KINDS else None,
        audit=audit,
    )


def waited(delta: timedelta) -> str:
    """How long a thread has waited, as a person says it: "12 min", "5 h", "9 days"."""
    minutes = max(0, int(delta.total_seconds() // 60))
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h"
    return f"{minutes // (24 * 60)} days"


def _triage(request: Request, rows: Page[tq.InboxRow], now: datetime) -> dict[str, Any]:
    """What the inbox's triage needs besides the rows: how long each has waited, and the
    page to come back to after a bulk decision (its filters)."""
    return {
        "waited": {row.id: waited(now - row.created_at) for row in rows.items},
        "back": str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
    }


def _say_sent(ctx: WebContext, who: Viewer, result: SendResult) -> None:
    """The banner after Send, once, from the session (a reload says nothing more)."""
    if result.duplicate:
        flash(ctx, who, "This answer was sent already (same text): nothing was sent again.", "warn")
    else:
        flash(ctx, who, f"Your answer is on its way to {result.to}. The sequence stays stopped.")


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Actor = Annotated[Viewer, Depends(guards.page(Capability.THREADS))]
    settings = ctx.app.settings

    @routes.get("/inbox")
    def inbox_page(
        request: Request,
        who: Who,
        state: str = "open",
        product: str = "",
        campaign: str = "",
        intent: str = "",
        owner: str = "",
        kind: str = "",
        audit: int = 0,
        page: int = 1,
        q: str = "",
    ) -> Response:
        f = inbox_filter(state, product, campaign, intent, owner, kind, audit == 1, q)
        with ctx.scoped.read(who.workspace_id) as uow:
            counts = tq.inbox_counts(uow, f)
            rows = tq.inbox(uow, settings, f, page=max(1, page))
            options = tq.filter_options(uow)
        triage = _triage(request, rows, ctx.app.clock.now())
        return ctx.renderer.page(
            request,
            "inbox.html",
            {"viewer": who, "active": "inbox", "f": f, "counts": counts, "rows": rows, **triage}
            | {"options": options, "states": tq.STATES},
        )

    def render_thread(
        request: Request, who: Viewer, thread_id: int, *, status: int = 200, **extra: Any
    ) -> Response:
        images = request.query_params.get("images") == "1"
        with ctx.scoped.read(who.workspace_id) as uow:
            view = thread_page(uow, thread_id, settings, viewer=who.email)
        mark_viewing(ctx, who, thread_id)  # after the read: the thread is this workspace's
        received = view.received
        safe = (
            sanitize_email_html(received.html, remote_images=images)
            if received and received.html.strip()
            else None
        )
        context = {**BLANK, **extra}
        context.update(
            viewer=who,
            active="inbox",
            t=view.detail,
            view=view,
            forms=forms_for(view.detail["actions"]),
            safe=safe,
            remote=images,
        )
        return ctx.renderer.page(
            request, "thread.html", context, status=status, csp=message_csp(remote_images=images)
        )

    @routes.get("/threads/{thread_id}")
    def thread_detail_page(request: Request, who: Who, thread_id: ObjectId) -> Response:
        return render_thread(request, who, thread_id)

    @routes.post("/threads/{thread_id}/decide")
    def decide_on_thread(
        request: Request,
        who: Actor,
        thread_id: ObjectId,
        action: Annotated[str, Form(max_length=40)] = "",
        until: Annotated[str, Form(max_length=40)] = "",
        until_at: Annotated[str, Form(max_length=40)] = "",
        to: Annotated[str, Form(max_length=320)] = "",
        lead: Annotated[str, Form(max_length=320)] = "",
        step_id: Annotated[str, Form(max_length=20)] = "",
        seen: Annotated[str, Form(max_length=12)] = "",
        confirm: Annotated[str, Form(max_length=5)] = "",
        zone: Annotated[str, Form(max_length=64)] = "",
    ) -> Response:
        try:
            decision = decision_request(
                action,
                who.email,
                ctx.app.clock.now(),
                until=until,
                until_at=until_at,
                to=to,
                lead=lead,
                step_id=step_id,
                seen=seen_of(seen),
                confirmed=confirm == "1",
                zone=zone,
            )
            with ctx.scoped.write(who.workspace_id) as uow:
                result = decide(uow, thread_id, decision, settings)
                uow.commit()
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None
        except (BadDecision, DecisionError, LookupError, VersionChanged) as exc:
            changed = exc.changes if isinstance(exc, VersionChanged) else []
            return render_thread(request, who, thread_id, status=409, error=str(exc), changed=changed)
        target = result.new_thread_id or thread_id
        # Said once, on the next page, from the session: a reload or a shared URL says nothing.
        flash(ctx, who, f"{who.email}: {result.message}")
        return RedirectResponse(f"/threads/{target}#history", status_code=303)

    @routes.post("/threads/{thread_id}/send")
    def send_answer(
        request: Request,
        who: Actor,
        thread_id: ObjectId,
        body: Annotated[str, Form(max_length=100_000)] = "",
        subject: Annotated[str, Form(max_length=998)] = "",
        seen: Annotated[str, Form(max_length=12)] = "",
        another: Annotated[str, Form(max_length=5)] = "",
    ) -> Response:
        """The Send button: the person's explicit action, the only way a draft leaves. Sent
        only on the version the page showed, the body as the person left it."""
        try:
            answer = PersonReply(
                thread_id,
                body,
                who.email,
                subject.strip() or None,
                seen=seen_of(seen),
                another=another == "1",
            )
            result = send_reply(ctx.app_for(who.workspace_id), answer)
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None
        except (BadDecision, SendRefused, VersionChanged) as exc:
            changed = exc.changes if isinstance(exc, VersionChanged) else []
            # Their text stays in the form: what they wrote is never replaced by a new draft.
            return render_thread(
                request, who, thread_id, status=409, error=str(exc), changed=changed, kept=body
            )
        finally:
            leave(ctx, who, thread_id)
        if result.state not in ("sent", "sending") and not result.duplicate:
            # The transport refused it or its outcome is unknown: the person reads why here;
            # a refused answer may be sent again, an unknown one is never resent by itself.
            error = f"Not sent ({result.state}): {result.detail}"
            return render_thread(request, who, thread_id, error=error)
        _say_sent(ctx, who, result)
        return RedirectResponse(f"/threads/{thread_id}#answers", status_code=303)

    return routes


def leave(ctx: WebContext, who: Viewer, thread_id: int) -> None:
    """The person's answer went (or was refused): they are no longer answering."""
    with ctx.scoped.write(who.workspace_id) as uow:
        presence.leave(uow, thread_id, who.email)
        uow.commit()


def seen_of(seen: str) -> int:
    """The version the page showed (its hidden field)."""
    if not seen.isdigit() or len(seen) > 12:
        raise BadDecision("this page is older than the thread's versions: reload it and act again")
    return int(seen)


def mark_viewing(ctx: WebContext, who: Viewer, thread_id: int) -> None:
    with ctx.scoped.write(who.workspace_id) as uow:
        presence.mark(uow, thread_id, who.email, "viewing")
        uow.commit()
