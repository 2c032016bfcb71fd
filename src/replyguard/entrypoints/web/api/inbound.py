"""/api/v1/inbound: messages kept for a person, one message, suppressions, source health."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from dataclasses import asdict
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId, PageNumber, PerPage
from replyguard.entrypoints.web.sanitize import sanitize_email_html
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.queries import inbound as q

Status = Literal[
    "unmatched", "probable", "unparsable", "suspect", "quarantined", "refused", "matched", "stored"
]


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["inbound"])
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]

    @routes.get("/inbound", response_model=s.PageOf[s.InboundRow])
    def list_inbound_messages(
        caller: Token,
        status: Status = "unmatched",
        page: PageNumber = 1,
        per_page: PerPage = 50,
    ) -> object:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.list_inbound(uow, status, page=page, per_page=per_page)

    @routes.get("/inbound/counts", response_model=dict[str, int])
    def inbound_counts(caller: Token) -> dict[str, int]:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.inbound_counts(uow)

    @routes.get("/inbound/{inbound_id}", response_model=s.InboundMessage)
    def get_inbound_message(
        caller: Token, inbound_id: ObjectId, remote_images: bool = False
    ) -> s.InboundMessage:
        """One message: headers, text, and its HTML sanitised (remote images left out unless
        `remote_images`). Render the HTML only in a sandboxed frame."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            found = q.inbound_message(uow, inbound_id)
        safe = sanitize_email_html(found.html, remote_images=remote_images) if found.html.strip() else None
        return s.InboundMessage(
            message=s.InboundRow.model_validate(found.row),
            headers=[s.Header(name=n, value=v) for n, v in found.headers],
            text=found.text,
            html=safe.html if safe else None,
            blocked_images=safe.blocked_images if safe else 0,
            size=found.size,
            held_lead_ids=found.held_lead_ids,
        )

    @routes.get("/suppressions", response_model=s.PageOf[s.Suppression])
    def list_suppressions(
        caller: Token,
        q_: Annotated[str, Query(alias="q", max_length=200)] = "",
        page: PageNumber = 1,
        per_page: PerPage = 50,
    ) -> object:
        with ctx.scoped.read(caller.workspace_id) as uow:
            return q.list_suppressions(uow, q_, page=page, per_page=per_page)

    @routes.get("/inbound-sources", response_model=list[s.SourceHealth])
    def inbound_sources(caller: Token) -> list[s.SourceHealth]:
        """Each IMAP source: last completed read, lag, last error, error count."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            found = q.source_health(uow)
        return [
            s.SourceHealth.model_validate(
                {**asdict(h), "lag_seconds": h.lag.total_seconds() if h.lag else None}
            )
            for h in found
        ]

    return routes
