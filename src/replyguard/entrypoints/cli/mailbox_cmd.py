"""`replyguard mailbox add|test|list|set|resume|remove`: connected mailboxes and their settings.

`add` connects a mailbox to its own SMTP submission server and IMAP account (its password
read from a file or standard input, stored encrypted: REPLYGUARD_SECRET_KEY), or to a Google
or Microsoft account by OAuth2 (`--oauth`: open the printed address, sign in, paste back the
address the browser lands on; the grant is stored encrypted); `test` logs in
to both and says what works, sending nothing; `remove` forgets the account. A mailbox's sender
name, daily cap and cap day are shared by every campaign that sends from it; `set` is the one
place to change them. A mailbox a server refused (a wrong password, a refused sender, relaying
denied) is paused by the worker; `resume` lifts that once fixed. No password is ever printed.
"""

from typing import Annotated

import typer
from rich.table import Table

from replyguard.entrypoints.cli.options import AsJson, ListJson

Address = Annotated[str, typer.Argument(help="The mailbox's address (as in its campaigns' files).")]

mailbox_app = typer.Typer(
    no_args_is_help=True, help="Sending mailboxes: connected accounts, settings and pauses."
)


def register(app: typer.Typer) -> None:
    """Add the `mailbox` commands to the CLI."""
    app.add_typer(mailbox_app, name="mailbox")


@mailbox_app.command("list")
def mailbox_list(ctx: typer.Context, as_json: ListJson = False) -> None:
    """Every mailbox with its settings, status and campaigns."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.workspace.mailboxes import list_mailboxes

    instance = open_app(ctx)
    with instance.uow() as uow:
        mailboxes = list_mailboxes(uow)
    if as_json:
        emit_json(mailboxes)
        return
    table = Table(title="mailboxes")
    for column in (
        "address",
        "sender name",
        "cap/day",
        "cap day in",
        "sends via",
        "reads",
        "status",
        "campaigns",
    ):
        table.add_column(column)
    for mb in mailboxes:
        status = mb["status"] if mb["status"] == "active" else f"{mb['status']}: {mb['paused_reason']}"
        table.add_row(
            mb["address"],
            mb["from_name"],
            str(mb["daily_cap"]),
            mb["timezone"],
            (mb["smtp"] or "default transport") + (f" ({mb['oauth']} OAuth2)" if mb.get("oauth") else ""),
            f"{mb['imap']} ({', '.join(mb['folders'])})" if mb["imap"] else "-",
            status,
            ", ".join(mb["campaigns"]),
        )
    out.print(table)


@mailbox_app.command("set")
def mailbox_set(
    ctx: typer.Context,
    address: Address,
    from_name: Annotated[str | None, typer.Option("--from-name", help="The sender name.")] = None,
    daily_cap: Annotated[int | None, typer.Option("--daily-cap", help="Most emails a day.")] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="The zone whose days the cap counts.")
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option("--max-connections", help="Most SMTP connections open at once (0: no limit)."),
    ] = None,
    per_minute: Annotated[
        int | None, typer.Option("--per-minute", help="Most emails in any minute (0: no limit).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Change a mailbox's settings, for every campaign that sends from it."""
    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.domain.schedule import ScheduleError
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.workspace.mailboxes import MailboxSettings, set_mailbox

    wanted = MailboxSettings(from_name, daily_cap, timezone, max_connections, per_minute)
    if wanted == MailboxSettings():
        fail(
            "nothing to set: give --from-name, --daily-cap, --timezone, --max-connections or --per-minute",
            code=2,
        )
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            changes = set_mailbox(uow, address, wanted)
            uow.commit()
    except (LookupError, CampaignSpecError, ScheduleError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json(
            {
                "mailbox": address,
                "changes": {name: {"before": b, "after": a} for name, (b, a) in changes.items()},
            }
        )
        return
    if not changes:
        out.print(f"{address}: nothing changed")
    for name, (before, after) in changes.items():
        out.print(f"{address}: {name} {before} -> {after}", highlight=False)


@mailbox_app.command("resume")
def mailbox_resume(ctx: typer.Context, address: Address, as_json: AsJson = False) -> None:
    """Send from a paused mailbox again (after fixing what its server refused)."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.workspace.mailboxes import resume_mailbox

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            resumed = resume_mailbox(uow, address)
            uow.commit()
    except (LookupError, ValueError) as exc:  # GrantRefused: connect it again instead
        fail(str(exc))
    if as_json:
        emit_json({"mailbox": address, "resumed": resumed, "status": "active"})
        return
    out.print(f"{address}: {'sending again' if resumed else 'was not paused'}")


def _read_password(path: str | None) -> str | None:
    """The password from a file (its first line), `-` for standard input, or None."""
    import sys
    from pathlib import Path

    if path is None:
        return None
    if path == "-":
        return sys.stdin.readline().rstrip("\r\n") or None
    try:
        first = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--password-file: cannot read {path}: {exc.__class__.__name__}") from None
    if not first or not first[0]:
        raise ValueError(f"--password-file: {path} holds no password on its first line")
    return first[0]


@mailbox_app.command("add")
def mailbox_add(
    ctx: typer.Context,
    address: Address,
    smtp: Annotated[
        str | None,
        typer.Option(
            "--smtp",
            metavar="URL",
            help="Its SMTP submission server: smtp+starttls://user@host:587 or smtps://user@host:465"
            " (the user defaults to the address).",
        ),
    ] = None,
    imap: Annotated[
        str | None,
        typer.Option("--imap", metavar="URL", help="Its IMAP account: imaps://user@host:993/INBOX."),
    ] = None,
    password_file: Annotated[
        str | None,
        typer.Option(
            "--password-file",
            metavar="FILE",
            help="A file whose first line is the password (- reads standard input); stored encrypted.",
        ),
    ] = None,
    folder: Annotated[
        list[str] | None,
        typer.Option(
            "--folder", help="A folder to watch for replies (repeat it; default: the URL's, INBOX)."
        ),
    ] = None,
    sent_folder: Annotated[
        str | None, typer.Option("--sent-folder", help="Its Sent folder (where sent mail is kept).")
    ] = None,
    from_name: Annotated[str | None, typer.Option("--from-name", help="The sender name.")] = None,
    daily_cap: Annotated[int | None, typer.Option("--daily-cap", help="Most emails a day.")] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="The zone whose days the cap counts.")
    ] = None,
    oauth: Annotated[
        str | None,
        typer.Option(
            "--oauth",
            metavar="PROVIDER",
            help="Sign in with google or microsoft instead of a password (OAuth2; IMAP and SMTP"
            " then use the provider's servers unless --smtp/--imap say otherwise).",
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", help="Who is told if the grant is ever refused (default: the mailbox's own address)."
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Connect a mailbox to its own SMTP server and IMAP account (new or existing mailbox)."""
    if oauth is not None:
        if password_file is not None:
            from replyguard.entrypoints.cli.app import fail
            from replyguard.entrypoints.cli.errors import EXIT_USAGE

            fail("give --password-file or --oauth, not both", code=EXIT_USAGE)
        _add_oauth(ctx, address, oauth, smtp, imap, by, (from_name, daily_cap, timezone), as_json)
        return
    from replyguard.adapters.secret_box import NoSecretKey
    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.domain.schedule import ScheduleError
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.entrypoints.cli.errors import EXIT_USAGE
    from replyguard.service_layer.workspace.mailbox_accounts import Account, AccountError, connect_mailbox
    from replyguard.service_layer.workspace.mailboxes import MailboxSettings

    instance = open_app(ctx)
    try:
        password = _read_password(password_file)
        account = Account(smtp, imap, password, tuple(folder or ()), sent_folder)
        with instance.uow() as uow:
            shown = connect_mailbox(
                uow, instance.secret_box(), address, account, MailboxSettings(from_name, daily_cap, timezone)
            )
            uow.commit()
    except NoSecretKey as exc:
        fail(str(exc), code=EXIT_USAGE)
    except (AccountError, CampaignSpecError, ScheduleError, ValueError) as exc:
        fail(str(exc), code=EXIT_USAGE)
    if as_json:
        emit_json(shown)
        return
    out.print(f"{shown['address']}: connected", highlight=False)
    out.print(f"  sends via {shown['smtp'] or 'the default transport'}", highlight=False)
    if shown["imap"]:
        out.print(f"  reads {shown['imap']} ({', '.join(shown['folders'])})", highlight=False)
    out.print(f"  password stored encrypted: {'yes' if shown['password_stored'] else 'none given'}")
    out.print(f"  check it with: replyguard mailbox test {shown['address']}", highlight=False)


def _add_oauth(
    ctx: typer.Context,
    address: str,
    provider: str,
    smtp: str | None,
    imap: str | None,
    by: str | None,
    settings: tuple[str | None, int | None, str | None],
    as_json: bool,
) -> None:
    """`mailbox add EMAIL --oauth google|microsoft`: the authorization-code flow with PKCE,
    pasted. The URL goes to standard error (so --json stays one document), the answer is read
    from standard input."""
    import sys

    from replyguard.adapters.oauth import AuthorizationFailed, TokenUnavailable
    from replyguard.adapters.secret_box import NoSecretKey
    from replyguard.domain.addresses import normalize_address
    from replyguard.domain.campaign_spec import CampaignSpecError
    from replyguard.domain.schedule import ScheduleError
    from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app, out
    from replyguard.entrypoints.cli.errors import EXIT_USAGE
    from replyguard.service_layer.workspace.mailbox_accounts import AccountError
    from replyguard.service_layer.workspace.mailbox_oauth import connect_oauth
    from replyguard.service_layer.workspace.mailboxes import MailboxSettings

    instance = open_app(ctx)
    try:
        # Told if the grant is ever refused: by default the person who signs in, the mailbox's.
        connected_by = normalize_address(by or address)
        client = instance.oauth_client(provider.strip().lower())
        found = instance.oauth.provider(provider.strip().lower())
        box = instance.secret_box()
        if box is None:
            raise NoSecretKey("store the mailbox's OAuth2 grant")
    except NoSecretKey as exc:
        fail(str(exc), code=EXIT_USAGE)
    except ValueError as exc:
        fail(str(exc), code=EXIT_USAGE)
    started = client.begin(login_hint=address)
    err.print(f"Open this address in a browser, sign in to {found.label} as {address} and allow access:")
    err.print(started.url, soft_wrap=True)
    err.print("Then paste the address the browser was sent back to (or just its code) and press Enter:")
    answer = sys.stdin.readline()
    try:
        grant = client.finish(answer, started.state, started.code_verifier, instance.wall_clock.now())
        with instance.uow() as uow:
            shown = connect_oauth(
                uow,
                box,
                found,
                address,
                grant,
                by=connected_by,
                smtp_url=smtp,
                imap_url=imap,
                settings=MailboxSettings(*settings),
            )
            uow.commit()
    except (AuthorizationFailed, AccountError, CampaignSpecError, ScheduleError) as exc:
        fail(str(exc), code=EXIT_USAGE)
    except TokenUnavailable as exc:
        fail(f"{found.label} did not give a token: {exc}")
    if as_json:
        emit_json(shown)
        return
    out.print(f"{shown['address']}: connected with {found.label} (OAuth2)", highlight=False)
    out.print(f"  sends via {shown['smtp']}", highlight=False)
    out.print(f"  reads {shown['imap']} ({', '.join(shown['folders'])})", highlight=False)
    out.print("  grant stored encrypted; access tokens are renewed before they expire")
    out.print(f"  check it with: replyguard mailbox test {shown['address']}", highlight=False)


@mailbox_app.command("test")
def mailbox_test(
    ctx: typer.Context,
    address: Address,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for each server.")] = 30.0,
    as_json: AsJson = False,
) -> None:
    """Log in to the mailbox's SMTP and IMAP servers and say what works; nothing is sent."""
    from replyguard.adapters.secret_box import NoSecretKey, SecretUnreadable
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.workspace.mailbox_accounts import check_account, stored_account

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            account = stored_account(
                uow, instance.secret_box(), address=address, token_for=instance.oauth_token
            )
    except (LookupError, ValueError, NoSecretKey, SecretUnreadable) as exc:
        fail(str(exc))
    if account is None:
        fail(f"{address} has no account of its own: connect it with `replyguard mailbox add`")
    checks = check_account(account, timeout=timeout)
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json(
            {
                "mailbox": account.address,
                "ok": not failed,
                "checks": [{"what": c.what, "ok": c.ok, "words": c.words} for c in checks],
            }
        )
    else:
        for check in checks:
            out.print(f"{'works' if check.ok else 'FAILS'}  {check.what}: {check.words}", highlight=False)
    if failed:
        which = ", ".join(c.what for c in failed)
        fail(f"{account.address}: {len(failed)} of {len(checks)} checks failed ({which})")


@mailbox_app.command("remove")
def mailbox_remove(
    ctx: typer.Context,
    address: Address,
    yes: Annotated[bool, typer.Option("--yes", help="Do it without asking.")] = False,
    as_json: AsJson = False,
) -> None:
    """Forget a mailbox's account and password (a mailbox no campaign uses goes altogether)."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.entrypoints.cli.errors import EXIT_USAGE
    from replyguard.service_layer.workspace.mailbox_accounts import disconnect_mailbox

    if not yes and not typer.confirm(f"Forget the account and password of {address}?", default=False):
        fail("not removed (pass --yes to do it without asking)", code=EXIT_USAGE)
    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            done = disconnect_mailbox(uow, address)
            uow.commit()
    except (LookupError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        emit_json({"mailbox": address, "result": done})
        return
    if done == "removed":
        out.print(f"{address}: removed", highlight=False)
    else:
        out.print(
            f"{address}: account and password forgotten; its campaigns send through the default transport",
            highlight=False,
        )
