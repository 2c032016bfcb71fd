"""/api/v1 for keeping the machine honest: audit runs (history and one run with its evidence)
and retrying a quarantined inbound message (mailboxes: api/mailboxes.py). Audits are started
by the CLI or cron, not here: a run sends real email."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from replyguard.domain.access import Capability
from replyguard.domain.inbound.status import IllegalInboundMove
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.audit.run import audit_history
from replyguard.service_layer.inbound.quarantine import retry
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries import audit as aq


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Retrier = Annotated[Caller, Depends(guards.api(Capability.INBOUND))]

    @routes.get("/audit/runs", response_model=list[s.AuditRunLine], tags=["audit"])
    def audit_runs(
        caller: Token,
        campaign: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 30,
    ) -> list[dict[str, Any]]:
        """The latest `replyguard audit` runs, newest first, with the checks that failed."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return audit_history(uow, campaign=campaign, limit=limit)

    @routes.get("/audit/runs/{run_id}", response_model=s.AuditRun, tags=["audit"])
    def audit_run(caller: Token, run_id: ObjectId) -> dict[str, Any]:
        """One run: every check with its verdict and evidence (ids, times, states)."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return aq.run_detail(uow, run_id).to_json()

    @routes.post(
        "/inbound/{inbound_id}/retry",
        response_model=s.RetryResult,
        tags=["inbound"],
        responses={409: {"description": "The message was processed already; its outcome stands"}},
    )
    def retry_inbound(caller: Retrier, inbound_id: ObjectId) -> s.RetryResult:
        """Process a quarantined message again, once its cause is fixed."""
        try:
            [result] = retry(ctx.app_for(caller.workspace_id), [inbound_id])
        except LookupError:
            raise NotFound(f"no inbound message {inbound_id}") from None
        except IllegalInboundMove:
            raise HTTPException(409, "the message was processed already; its outcome stands") from None
        return s.RetryResult(
            inbound_id=result.inbound_id, status=result.status, kind=result.kind, detail=result.detail
        )

    return routes
