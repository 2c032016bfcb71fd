"""The inbound page: messages kept for a person (a probable one links to the thread where it
is confirmed or rejected; a quarantined one can be retried), one message (its HTML
sanitised, in a sandboxed frame, remote images on request), the suppression list, and
source health."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.domain.inbound.status import IllegalInboundMove
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.sanitize import message_csp, sanitize_email_html
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.inbound.quarantine import retry
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries import inbound as iq


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Retrier = Annotated[Viewer, Depends(guards.page(Capability.INBOUND))]

    @routes.get("/inbound")
    def inbound_page(request: Request, who: Who, status: str = "unmatched", page: int = 1) -> Response:
        status = status if status in iq.STATUSES else "unmatched"
        with ctx.scoped.read(who.workspace_id) as uow:
            counts = iq.inbound_counts(uow)
            found = iq.list_inbound(uow, status, page=max(1, page))
            sources = iq.source_health(uow)
        context = {"viewer": who, "active": "inbound", "status": status, "kept": iq.KEPT}
        context.update(counts=counts, messages=found, sources=sources)
        return ctx.renderer.page(request, "inbound.html", context)

    @routes.get("/inbound/{inbound_id}")
    def message_page(request: Request, who: Who, inbound_id: ObjectId, images: int = 0) -> Response:
        return render_message(request, who, inbound_id, images == 1)

    def render_message(
        request: Request, who: Viewer, inbound_id: int, remote: bool, *, error: str = ""
    ) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            message = iq.inbound_message(uow, inbound_id)
        safe = sanitize_email_html(message.html, remote_images=remote) if message.html.strip() else None
        context = {"viewer": who, "active": "inbound", "m": message, "safe": safe, "remote": remote}
        context.update(retryable=iq.RETRYABLE, error=error)
        return ctx.renderer.page(
            request,
            "inbound_message.html",
            context,
            status=409 if error else 200,
            csp=message_csp(remote_images=remote),
        )

    @routes.post("/inbound/{inbound_id}/retry")
    def retry_message(request: Request, who: Retrier, inbound_id: ObjectId) -> Response:
        """A person fixed the cause of a quarantine: the message is processed again."""
        try:
            [result] = retry(ctx.app_for(who.workspace_id), [inbound_id])
        except LookupError:
            raise NotFound(f"no inbound message {inbound_id}") from None
        except IllegalInboundMove:
            error = "This message was processed already; its outcome stands."
            return render_message(request, who, inbound_id, False, error=error)
        flash(ctx, who, f"Processed again: now {result.status.replace('_', ' ')}.")
        return RedirectResponse(f"/inbound/{inbound_id}", status_code=303)

    @routes.get("/suppressions")
    def suppressions_page(request: Request, who: Who, q: str = "", page: int = 1) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            found = iq.list_suppressions(uow, q[:200], page=max(1, page))
        context = {"viewer": who, "active": "inbound", "q": q, "suppressions": found}
        return ctx.renderer.page(request, "suppressions.html", context)

    return routes
