"""Mailboxes: each sending identity, its own servers, and its pause. An admin connects a
mailbox to its SMTP server and IMAP account here (the password is stored encrypted and never
shown again) or to a Google or Microsoft account ("Connect with ...": the OAuth2 code flow with
PKCE, its state bound to this web session), tests its logins (nothing is sent), and forgets an
account. A server that
refuses the mailbox itself (credentials, sender, relaying) pauses it; a person fixes the cause
and resumes it here."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Form, HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from replyguard.domain.access import Capability
from replyguard.entrypoints.web.api import mailboxes as api
from replyguard.entrypoints.web.api.schemas import MailboxConnect
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.render import CSP
from replyguard.entrypoints.web.security import Guards, Viewer, flash
from replyguard.service_layer.queries import mailboxes as mq
from replyguard.service_layer.workspace.mailbox_accounts import disconnect_mailbox
from replyguard.service_layer.workspace.mailboxes import GrantRefused, MailboxSettings, resume_mailbox

Field = Annotated[str, Form(max_length=500)]


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Who = Annotated[Viewer, Depends(guards.page(Capability.READ))]
    Admin = Annotated[Viewer, Depends(guards.page(Capability.MAILBOXES))]

    def render(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
        providers = [p for p in ctx.app.oauth.providers if p.configured]
        # "Connect with ..." posts to us and is sent on to the provider: the page's form-action
        # names exactly the configured providers' sign-in origins, and nothing else.
        origins = sorted({"{0.scheme}://{0.netloc}".format(urlsplit(p.authorize_url)) for p in providers})
        page_csp = CSP.replace("form-action 'self'", " ".join(["form-action 'self'", *origins]))
        with ctx.scoped.read(who.workspace_id) as uow:
            rows = mq.list_mailboxes(uow)
        context = {"error": "", "tested": None, "form": {}, **extra}
        context.update(
            viewer=who,
            active="mailboxes",
            mailboxes=rows,
            can_connect=ctx.app.secret_keys != (),
            oauth_providers=[(p.name, p.label) for p in providers],
            oauth_labels={p.name: p.label for p in ctx.app.oauth.providers},
        )
        return ctx.renderer.page(request, "mailboxes.html", context, status=status, csp=page_csp)

    @routes.get("/mailboxes")
    def mailboxes_page(request: Request, who: Who) -> Response:
        return render(request, who)

    @routes.post("/mailboxes")
    def connect(
        request: Request,
        who: Admin,
        address: Annotated[str, Form(max_length=320)] = "",
        smtp: Field = "",
        imap: Field = "",
        password: Annotated[str, Form(max_length=1000)] = "",
        folders: Field = "",
        sent_folder: Annotated[str, Form(max_length=200)] = "",
    ) -> Response:
        # The form comes back filled in after a refusal, except the password.
        form = {
            "address": address,
            "smtp": smtp,
            "imap": imap,
            "folders": folders,
            "sent_folder": sent_folder,
        }
        try:
            body = MailboxConnect(
                address=address,
                smtp=smtp or None,
                imap=imap or None,
                password=password or None,
                folders=[f.strip() for f in folders.replace("\n", ",").split(",") if f.strip()],
                sent_folder=sent_folder or None,
            )
        except ValueError:  # pydantic's, which would echo the password
            return render(request, who, error="too many folders (50 at most)", form=form, status=400)
        try:
            api.connect(ctx, who.workspace_id, body)
        except HTTPException as exc:
            return render(request, who, error=str(exc.detail), form=form, status=400)
        flash(ctx, who, f"{address.strip().lower()} connected: test its logins below.")
        return RedirectResponse("/mailboxes", status_code=303)

    @routes.post("/mailboxes/{mailbox_id}/test")
    def test(request: Request, who: Admin, mailbox_id: ObjectId) -> Response:
        with ctx.scoped.read(who.workspace_id) as uow:
            address = mq.mailbox_address(uow, mailbox_id)
        try:
            checks = api.checks_of(ctx, who.workspace_id, mailbox_id)
        except HTTPException as exc:
            return render(request, who, error=f"{address}: {exc.detail}", status=exc.status_code)
        return render(request, who, tested={"address": address, "checks": checks})

    @routes.post("/mailboxes/{mailbox_id}/remove")
    def remove(who: Admin, mailbox_id: ObjectId) -> Response:
        with ctx.scoped.write(who.workspace_id) as uow:
            address = mq.mailbox_address(uow, mailbox_id)
            result = disconnect_mailbox(uow, address)
            uow.commit()
        said = (
            "removed" if result == "removed" else "account forgotten: its campaigns use the default transport"
        )
        flash(ctx, who, f"{address}: {said}.")
        return RedirectResponse("/mailboxes", status_code=303)

    @routes.post("/mailboxes/{mailbox_id}/limits")
    def limits(
        request: Request,
        who: Admin,
        mailbox_id: ObjectId,
        daily_cap: Annotated[str, Form(max_length=20)] = "",
        max_connections: Annotated[str, Form(max_length=20)] = "",
        per_minute: Annotated[str, Form(max_length=20)] = "",
    ) -> Response:
        # The daily cap and the sending limits; an empty limit field removes that limit.
        try:
            limits = _limits(daily_cap, max_connections, per_minute)
            address = api.change_settings(ctx, who.workspace_id, mailbox_id, limits)
        except (ValueError, HTTPException) as exc:
            why = exc.detail if isinstance(exc, HTTPException) else exc
            return render(request, who, error=f"Limits not saved: {why}", status=400)
        flash(ctx, who, f"{address}: limits saved; the worker applies them from its next email.")
        return RedirectResponse("/mailboxes", status_code=303)

    @routes.post("/mailboxes/{mailbox_id}/resume")
    def resume(who: Admin, mailbox_id: ObjectId) -> Response:
        try:
            with ctx.scoped.write(who.workspace_id) as uow:
                address = mq.mailbox_address(uow, mailbox_id)
                resume_mailbox(uow, address)
                uow.commit()
        except GrantRefused as exc:
            flash(ctx, who, str(exc), "error")
            return RedirectResponse("/mailboxes", status_code=303)
        flash(ctx, who, f"{address} resumed: its campaigns send again.")
        return RedirectResponse("/mailboxes", status_code=303)

    return routes


def _limits(daily_cap: str, max_connections: str, per_minute: str) -> MailboxSettings:
    """The limits form's fields: an empty limit removes it (0), an empty cap stays as it is."""
    return MailboxSettings(
        daily_cap=_whole("daily cap", daily_cap),
        max_connections=_whole("connections at once", max_connections) or 0,
        per_minute=_whole("emails a minute", per_minute) or 0,
    )


def _whole(name: str, text: str) -> int | None:
    """A form's whole number, or None when left empty; anything else is said in words."""
    text = text.strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):  # "²" and "١٢" are digits to str.isdigit
        raise ValueError(f"{name} must be a whole number, got {text!r}")
    return int(text)
