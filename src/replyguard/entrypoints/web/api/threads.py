"""/api/v1/threads: the Reply Rescue inbox, one thread, a person's decisions, and their
answer (`send`: sent only on this explicit request, once per idempotency key)."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Response

from replyguard.domain.access import Capability
from replyguard.domain.thread_actions import SENDS
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.pages.threads import inbox_filter
from replyguard.entrypoints.web.params import ObjectId, PageNumber, PerPage
from replyguard.entrypoints.web.sanitize import sanitize_email_html
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.entrypoints.web.thread_actions import BadDecision, decision_request
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries import threads as tq
from replyguard.service_layer.queries.thread_page import ThreadPage, thread_page
from replyguard.service_layer.rescue.decisions import (
    DecisionError,
    ThreadNotFound,
    VersionChanged,
    decide,
    get_thread,
)
from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, send_reply

State = Literal["open", "snoozed", "done", "all"]
Text = Annotated[str, Query(max_length=320)]


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter(tags=["threads"])
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    Actor = Annotated[Caller, Depends(guards.api(Capability.THREADS))]
    settings = ctx.app.settings

    def filters(
        state: State = "open",
        product: Text = "",
        campaign: Text = "",
        intent: Text = "",
        owner: Annotated[str, Query(max_length=320, description="The owner or the assignee")] = "",
        kind: Text = "",
        audit: Annotated[bool, Query(description="The audit's canary threads instead")] = False,
        q: Annotated[
            str,
            Query(max_length=200, description="Words in the lead's name, address or company, or their text"),
        ] = "",
    ) -> tq.InboxFilter:
        return inbox_filter(state, product, campaign, intent, owner, kind, audit, q)

    Filter = Annotated[tq.InboxFilter, Depends(filters)]

    @routes.get("/threads", response_model=s.PageOf[s.ThreadRow])
    def list_threads(caller: Token, f: Filter, page: PageNumber = 1, per_page: PerPage = 50) -> object:
        """Threads that wait for a person: open ones first (with `state=all`), then the most
        recently changed. The next step of each is recomputed from its lead as it is now."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return tq.inbox(uow, settings, f, page=page, per_page=per_page)

    @routes.get("/threads/counts", response_model=dict[str, int])
    def thread_counts(caller: Token, f: Filter) -> dict[str, int]:
        """Threads per state (open, snoozed, done, all) under the other filters."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return tq.inbox_counts(uow, f)

    @routes.get("/threads/{thread_id}", response_model=s.ThreadDetail)
    def get_thread(caller: Token, thread_id: ObjectId, response: Response) -> dict[str, Any]:
        """One thread: the conversation, the draft, the decisions that fit, what each decision
        did, and what a resume would send when. Render `received_html` only in a sandboxed
        frame. The `ETag` is the thread's version: send it back as `If-Match` (or `version`)
        with a decision or an answer; 409 if the thread moved since, with what changed."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            view = thread_page(uow, thread_id, settings)
        response.headers["ETag"] = f'"{view.detail["version"]}"'
        return detail_of(view)

    def apply(caller: Caller, thread_id: int, body: s.Decision, if_match: str | None = None) -> s.DecisionOut:
        seen = decision_seen(body, if_match, lambda: exists(ctx, caller, thread_id))
        try:
            decision = decision_request(
                body.action,
                caller.actor,
                ctx.app.clock.now(),
                until=body.until,
                until_at=body.until_at,
                to=body.to,
                lead=body.lead,
                step_id=body.step_id,
                seen=seen,
                confirmed=body.confirm,
            )
            with ctx.scoped.write(caller.workspace_id) as uow:
                result = decide(uow, thread_id, decision, settings)
                uow.commit()
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None
        except BadDecision as exc:
            raise HTTPException(422, str(exc)) from None
        except VersionChanged as exc:
            raise HTTPException(409, exc.to_json()) from None
        except (DecisionError, LookupError) as exc:
            raise HTTPException(409, str(exc)) from None
        return s.DecisionOut.model_validate(result.to_json())

    @routes.post(
        "/threads/{thread_id}/decisions",
        response_model=s.DecisionOut,
        responses={409: {"description": "The decision does not apply to the thread as it is now"}},
    )
    def decide_thread(
        caller: Actor, thread_id: ObjectId, body: s.Decision, if_match: IfMatch = None
    ) -> s.DecisionOut:
        """A person's decision, recorded with the token's name as who decided. `resume` and the
        others that re-plan return the steps planned (`planned`). Decided on the version seen
        (If-Match or `version`): 409 with what changed since if the thread moved; only the
        actions the thread offers (`actions`) are taken, anything else is 409 with why."""
        return apply(caller, thread_id, body, if_match)

    @routes.post("/threads/{thread_id}/assign", response_model=s.DecisionOut)
    def assign_thread(caller: Actor, thread_id: ObjectId, body: s.Assign) -> s.DecisionOut:
        return apply(caller, thread_id, s.Decision(action="assign", to=body.to))

    @routes.post("/threads/{thread_id}/snooze", response_model=s.DecisionOut)
    def snooze_thread(caller: Actor, thread_id: ObjectId, body: s.Snooze) -> s.DecisionOut:
        return apply(caller, thread_id, s.Decision(action="snooze", until_at=body.until))

    @routes.post("/threads/{thread_id}/done", response_model=s.DecisionOut)
    def close_thread(caller: Actor, thread_id: ObjectId) -> s.DecisionOut:
        return apply(caller, thread_id, s.Decision(action="done"))

    @routes.post(
        "/threads/{thread_id}/send",
        response_model=s.AnswerSent,
        responses={409: {"description": "Nothing may be sent from this thread (the detail says why)"}},
    )
    def send_answer(
        caller: Actor, thread_id: ObjectId, body: s.Answer, if_match: IfMatch = None
    ) -> s.AnswerSent:
        """Send a person's answer from the thread's mailbox, threaded under their message.
        The same answer again (the same idempotency key, by default the same subject, text and
        version) sends nothing and says `duplicate`. Never resumes the sequence. Sent only on
        the version seen (If-Match or `version`, 428 without): 409 with what changed since, or
        with who answered this version already (unless `another`)."""
        answer = answer_of(caller, thread_id, body, if_match, lambda: exists(ctx, caller, thread_id))
        try:
            result = send_reply(ctx.app_for(caller.workspace_id), answer)
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None
        except VersionChanged as exc:
            raise HTTPException(409, exc.to_json()) from None
        except SendRefused as exc:
            raise HTTPException(409, str(exc)) from None
        return s.AnswerSent(
            send_id=result.send_id,
            state=result.state,
            message_id=result.message_id,
            to=result.to,
            duplicate=result.duplicate,
            detail=result.detail,
        )

    return routes


IfMatch = Annotated[str | None, Header(max_length=100, description="The thread's ETag (its version)")]


def seen_version(version: int | None, if_match: str | None) -> int | None:
    """The version a request names: the body's `version`, else the If-Match ETag."""
    if version is not None:
        return version
    if not if_match:
        return None
    tag = if_match.strip().removeprefix("W/").strip('"')
    if not tag.isdigit() or len(tag) > 12:
        raise HTTPException(400, 'If-Match must be the thread\'s ETag (its version, like "7")')
    return int(tag)


def exists(ctx: WebContext, caller: Caller, thread_id: int) -> None:
    """404 for a thread that is not this workspace's, before any other answer about it."""
    with ctx.scoped.read(caller.workspace_id) as uow:
        try:
            get_thread(uow, thread_id)
        except ThreadNotFound:
            raise NotFound(f"no thread {thread_id}") from None


def answer_of(
    caller: Caller, thread_id: int, body: s.Answer, if_match: str | None, found: Callable[[], None]
) -> PersonReply:
    seen = seen_version(body.version, if_match)
    if seen is None:
        found()
        raise HTTPException(428, "an answer needs the version seen: If-Match or `version`")
    return PersonReply(
        thread_id,
        body.body,
        caller.actor,
        body.subject,
        body.idempotency_key,
        seen=seen,
        another=body.another,
    )


def decision_seen(body: s.Decision, if_match: str | None, found: Callable[[], None]) -> int | None:
    seen = seen_version(body.version, if_match)
    if seen is None and body.action.strip().replace("-", "_") in SENDS:
        found()
        raise HTTPException(
            428, "a decision that lets email go out needs the version seen: If-Match or `version`"
        )
    return seen


def detail_of(view: ThreadPage) -> dict[str, Any]:
    html = view.received.html if view.received else ""
    safe = sanitize_email_html(html).html if html.strip() else None
    return {
        **view.detail,
        "lead_id": view.lead_id,
        "history": view.history,
        "resume_plan": [p.to_json() for p in view.resume_plan],
        "received_html": safe,
        "presence": view.presence,
    }
