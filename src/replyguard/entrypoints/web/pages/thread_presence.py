"""Who else is on a thread page: the mark a page's script sets when its person starts writing
an answer (`service_layer/rescue/presence.py`). The page load sets "viewing" itself."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.responses import Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Guards, Viewer
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.rescue import presence
from replyguard.service_layer.rescue.decisions import ThreadNotFound, get_thread


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Actor = Annotated[Viewer, Depends(guards.page(Capability.THREADS))]

    @routes.post("/threads/{thread_id}/presence")
    def mark_presence(
        who: Actor, thread_id: ObjectId, doing: Annotated[str, Form(max_length=20)] = "viewing"
    ) -> Response:
        """A person started writing an answer (the page's script says so): others see it."""
        try:
            with ctx.scoped.read(who.workspace_id) as uow:
                get_thread(uow, thread_id)  # only a thread of this workspace gets a mark
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None
        with ctx.scoped.write(who.workspace_id) as uow:
            presence.mark(uow, thread_id, who.email, doing if doing in presence.DOING else "viewing")
            uow.commit()
        return Response(status_code=204)

    return routes
