""" "Connect with Google/Microsoft" on the Mailboxes page: the OAuth2 authorization-code flow
with PKCE (S256). `start` remembers the request (its state bound to this web session, the
verifier encrypted) and sends the person to the provider; `callback` takes the request back
(once, in the same session, within ten minutes), trades the code for a grant and stores it
encrypted. A mailbox paused because its grant was refused resumes when connected again.
Whatever goes wrong is said on the Mailboxes page, never with a token in it."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, Form
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.adapters.oauth import AuthorizationFailed, TokenUnavailable
from replyguard.adapters.secret_box import NoSecretKey
from replyguard.domain.access import Capability
from replyguard.domain.addresses import normalize_address
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.workspace.mailbox_accounts import AccountError
from replyguard.service_layer.workspace.mailbox_oauth import connect_oauth, remember_request, take_request


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Admin = Annotated[Viewer, Depends(guards.page(Capability.MAILBOXES))]

    def back(who: Viewer, text: str, kind: str = "ok") -> Response:
        flash(ctx, who, text, kind)
        return RedirectResponse("/mailboxes", status_code=303)

    @routes.post("/mailboxes/oauth/start")
    def oauth_start(
        who: Admin,
        address: Annotated[str, Form(max_length=320)] = "",
        provider: Annotated[str, Form(max_length=20)] = "",
    ) -> Response:
        try:
            normalized = normalize_address(address)
            client = ctx.app.oauth_client(provider)
            started = client.begin(login_hint=normalized)
            with ctx.scoped.write(who.workspace_id) as uow:
                remember_request(
                    uow,
                    ctx.app.secret_box(),
                    session_id=who.session_id,
                    address=normalized,
                    provider=provider,
                    authorization=started,
                    by=who.email,
                )
                uow.commit()
        except (NoSecretKey, ValueError) as exc:
            return back(who, f"not connected: {exc}", "error")
        return RedirectResponse(started.url, status_code=303)

    @routes.get("/mailboxes/oauth/callback")
    def oauth_callback(request: Request, who: Admin, state: str = "") -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                try:
                    pending = take_request(uow, ctx.app.secret_box(), state=state, session_id=who.session_id)
                finally:
                    uow.commit()  # a state tried is used up, whoever tried it
            provider = ctx.app.oauth.provider(pending.provider)
            client = ctx.app.oauth_client(pending.provider)
            grant = client.finish(str(request.url), state, pending.code_verifier, ctx.app.wall_clock.now())
            with ctx.scoped.write(who.workspace_id) as uow:
                shown = connect_oauth(
                    uow, ctx.app.secret_box(), provider, pending.address, grant, by=pending.by
                )
                uow.commit()
        except (AuthorizationFailed, AccountError, NoSecretKey, ValueError) as exc:
            return back(who, f"not connected: {exc}", "error")
        except TokenUnavailable as exc:
            return back(who, f"not connected, try again: {exc}", "error")
        return back(who, f"{shown['address']} connected with {provider.label}: test its logins below.")

    return routes
