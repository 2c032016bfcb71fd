"""/api/v1/mailboxes: each sending identity; connecting one to its own SMTP server and IMAP
account (the password stored encrypted, never returned), testing its logins, forgetting its
account, and resuming one a server's refusal paused."""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException

from replyguard.adapters.imap_check import Check
from replyguard.adapters.secret_box import NoSecretKey, SecretUnreadable
from replyguard.domain.access import Capability
from replyguard.domain.campaign_spec import CampaignSpecError
from replyguard.domain.schedule import ScheduleError
from replyguard.entrypoints.web.api import schemas as s
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.params import ObjectId
from replyguard.entrypoints.web.security import Caller, Guards
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries import mailboxes as mq
from replyguard.service_layer.workspace.mailbox_accounts import (
    Account,
    AccountError,
    check_account,
    connect_mailbox,
    disconnect_mailbox,
    stored_account,
)
from replyguard.service_layer.workspace.mailboxes import (
    GrantRefused,
    MailboxNotFound,
    MailboxSettings,
    resume_mailbox,
    set_mailbox,
)

#: Seconds `POST /mailboxes/{id}/test` waits for each server (a request should not hang).
TEST_TIMEOUT = 10.0


def checks_of(ctx: WebContext, workspace_id: int, mailbox_id: int) -> list[Check]:
    """`mailbox test` for the web: the checks, or an HTTPException saying why none ran."""
    try:
        with ctx.scoped.read(workspace_id) as uow:
            account = stored_account(
                uow,
                ctx.app.secret_box(),
                mailbox_id=mailbox_id,
                token_for=ctx.app.for_workspace(workspace_id).oauth_token,
            )
    except MailboxNotFound:
        raise NotFound(f"no mailbox {mailbox_id}") from None
    except (NoSecretKey, SecretUnreadable) as exc:
        raise HTTPException(409, str(exc)) from None
    if account is None:
        raise HTTPException(409, "the mailbox has no account of its own: connect it first")
    return check_account(account, timeout=TEST_TIMEOUT)


def connect(ctx: WebContext, workspace_id: int, body: s.MailboxConnect) -> int:
    """Connect from a request (API or page); HTTPException 409 without a key, 422 for a bad
    URL, folder or setting. Returns the mailbox's id."""
    account = Account(body.smtp, body.imap, body.password, tuple(body.folders), body.sent_folder)
    wanted = MailboxSettings(
        body.from_name, body.daily_cap, body.timezone, body.max_connections, body.per_minute
    )
    try:
        with ctx.scoped.write(workspace_id) as uow:
            connect_mailbox(uow, ctx.app.secret_box(), body.address, account, wanted)
            uow.commit()
            return mq.mailbox_id(uow, body.address)
    except NoSecretKey as exc:
        raise HTTPException(409, str(exc)) from None
    except (AccountError, CampaignSpecError, ScheduleError, ValueError) as exc:
        raise HTTPException(422, str(exc)) from None


def change_settings(ctx: WebContext, workspace_id: int, mailbox_id: int, wanted: MailboxSettings) -> str:
    """`mailbox set` for a request (API or page): NotFound for a mailbox of another workspace,
    HTTPException 422 for a bad value (nothing is changed then). Returns its address."""
    try:
        with ctx.scoped.write(workspace_id) as uow:
            address = mq.mailbox_address(uow, mailbox_id)
            set_mailbox(uow, address, wanted)
            uow.commit()
            return address
    except (CampaignSpecError, ScheduleError, ValueError) as exc:
        raise HTTPException(422, str(exc)) from None


def router(ctx: WebContext, guards: Guards) -> APIRouter:
    routes = APIRouter()
    Token = Annotated[Caller, Depends(guards.api(Capability.READ))]
    MailboxAdmin = Annotated[Caller, Depends(guards.api(Capability.MAILBOXES))]

    @routes.get("/mailboxes", response_model=list[s.Mailbox], tags=["mailboxes"])
    def list_mailboxes(caller: Token) -> list[mq.MailboxRow]:
        """Every mailbox, paused ones first (a server refused the mailbox itself)."""
        with ctx.scoped.read(caller.workspace_id) as uow:
            return mq.list_mailboxes(uow)

    @routes.post(
        "/mailboxes",
        response_model=s.Mailbox,
        status_code=201,
        tags=["mailboxes"],
        responses={
            409: {"description": "A password was given and no secret key is configured: nothing stored"},
            422: {"description": "A URL, folder or setting that cannot be used"},
        },
    )
    def connect_one(caller: MailboxAdmin, body: s.MailboxConnect) -> mq.MailboxRow:
        """Connect a mailbox (new, or one a campaign created) to its own SMTP server and IMAP
        account. The password is stored encrypted and never returned."""
        mailbox_id = connect(ctx, caller.workspace_id, body)
        with ctx.scoped.read(caller.workspace_id) as uow:
            return mq.mailbox_row(uow, mailbox_id)

    @routes.post(
        "/mailboxes/{mailbox_id}/test",
        response_model=s.MailboxTest,
        tags=["mailboxes"],
        responses={409: {"description": "No account of its own, or its password cannot be read"}},
    )
    def test_one(caller: MailboxAdmin, mailbox_id: ObjectId) -> s.MailboxTest:
        """Log in to the mailbox's SMTP and IMAP servers and say in words what works; nothing
        is sent and no folder changes."""
        checks = checks_of(ctx, caller.workspace_id, mailbox_id)
        return s.MailboxTest(
            mailbox_id=mailbox_id,
            ok=all(c.ok for c in checks),
            checks=[s.MailboxCheck(what=c.what, ok=c.ok, words=c.words) for c in checks],
        )

    @routes.delete("/mailboxes/{mailbox_id}", response_model=s.MailboxRemoved, tags=["mailboxes"])
    def remove_one(caller: MailboxAdmin, mailbox_id: ObjectId) -> s.MailboxRemoved:
        """Forget the mailbox's account and password; a mailbox no campaign uses goes altogether."""
        with ctx.scoped.write(caller.workspace_id) as uow:
            result = disconnect_mailbox(uow, mq.mailbox_address(uow, mailbox_id))
            uow.commit()
        return s.MailboxRemoved(mailbox_id=mailbox_id, result=result)

    @routes.patch(
        "/mailboxes/{mailbox_id}",
        response_model=s.Mailbox,
        tags=["mailboxes"],
        responses={422: {"description": "A value that cannot be used: nothing changed"}},
    )
    def change_one(
        caller: MailboxAdmin, mailbox_id: ObjectId, body: s.MailboxSettingsChange
    ) -> mq.MailboxRow:
        """Change the mailbox's sender name, daily cap, cap time zone and sending limits (SMTP
        connections at once, emails a minute; 0 removes a limit), for every campaign that sends
        from it; the worker reads them at the point of send."""
        wanted = MailboxSettings(
            body.from_name, body.daily_cap, body.timezone, body.max_connections, body.per_minute
        )
        change_settings(ctx, caller.workspace_id, mailbox_id, wanted)
        with ctx.scoped.read(caller.workspace_id) as uow:
            return mq.mailbox_row(uow, mailbox_id)

    @routes.post("/mailboxes/{mailbox_id}/resume", response_model=s.Resumed, tags=["mailboxes"])
    def resume(caller: MailboxAdmin, mailbox_id: ObjectId) -> s.Resumed:
        """The cause is fixed: the mailbox sends again."""
        try:
            with ctx.scoped.write(caller.workspace_id) as uow:
                resumed = resume_mailbox(uow, mq.mailbox_address(uow, mailbox_id))
                uow.commit()
        except GrantRefused as exc:
            raise HTTPException(409, str(exc)) from None
        return s.Resumed(mailbox_id=mailbox_id, resumed=resumed)

    return routes
