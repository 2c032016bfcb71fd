"""Mailboxes: each sending identity and its pause. A server that refuses the mailbox itself
(credentials, sender, relaying) pauses it; a person fixes the cause and resumes it here."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.mailboxes import resume_mailbox
from replyguard.service_layer.queries import mailboxes as mq


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Admin = Annotated[Viewer, Depends(guards.page(Capability.MAILBOXES))]

    @routes.get("/mailboxes")
    def mailboxes_page(request: Request, who: Who) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            rows = mq.list_mailboxes(uow)
        context = {"viewer": who, "active": "mailboxes", "mailboxes": rows}
        return ctx.renderer.page(request, "mailboxes.html", context)

    @routes.post("/mailboxes/{mailbox_id}/resume")
    def resume(who: Admin, mailbox_id: ObjectId) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            address = mq.mailbox_address(uow, mailbox_id)
            resume_mailbox(uow, address)
            uow.commit()
        flash(ctx, who, f"{address} resumed: its campaigns send again.")
        return RedirectResponse("/mailboxes", status_code=303)

    return routes
