"""`replyguard users ...`: the people who sign in to the web workspace, and what each may do.

The command line is the operator of the machine (it opens the database itself): it acts as an
owner of the workspace, and nothing here asks who is typing. The first user of a workspace is
its owner; later ones are members unless `--role` says otherwise.

A password is read from standard input when it is not a terminal (one line: `make run`,
scripts, secrets managers), and prompted twice, hidden, otherwise. It never appears in the
process list, the shell history or a log.
"""

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from replyguard.entrypoints.cli.options import AsJson, ListJson

if TYPE_CHECKING:
    from replyguard.service_layer.uow import UnitOfWork
    from replyguard.service_layer.workspace.accounts import UserView

users_app = typer.Typer(no_args_is_help=True, help="People who sign in to the web workspace.")
Email = Annotated[str, typer.Argument(help="The address the user signs in with.")]
ROLE_HELP = "owner, admin, member or readonly (see `replyguard users -h`)."


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")


def _password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    value: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


def _user_json(user: "UserView", workspace: str) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "role": user.role.value,
        "disabled": user.disabled,
        "must_change_password": user.must_change_password,
        "workspace": workspace,
    }


def _change(ctx: typer.Context, email: str, what: "Callable[[UnitOfWork, int], Any]") -> Any:
    """Run one change on the user with this address, as the operator; one line on failure."""
    from replyguard.domain.access import AccessDenied
    from replyguard.entrypoints.cli.app import fail, open_app
    from replyguard.service_layer.queries import NotFound
    from replyguard.service_layer.workspace.accounts import AccountError, user_by_email

    instance = open_app(ctx)
    ctx.meta["workspace"] = instance.workspace
    try:
        with instance.uow() as uow:
            result = what(uow, user_by_email(uow, email).id)
            uow.commit()
    except (AccountError, AccessDenied, NotFound) as exc:
        fail(str(exc))
    finally:
        instance.close()
    return result


def _done(as_json: bool, user: "UserView", workspace: str, said: str) -> None:
    from replyguard.entrypoints.cli.app import emit_json, out

    if as_json:
        emit_json(_user_json(user, workspace))
    else:
        out.print(said, highlight=False)


def _workspace(ctx: typer.Context) -> str:
    return str(ctx.meta.get("workspace", ""))


@users_app.command("add")
def add(
    ctx: typer.Context,
    email: Email,
    name: Annotated[str, typer.Option("--name", help="Shown in the web workspace.")] = "",
    role: Annotated[
        str | None,
        typer.Option("--role", help=f"{ROLE_HELP} Default: owner for the first user, else member."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Create a user of the workspace (--workspace); the password comes from stdin or a prompt."""
    from replyguard.domain.access import Role
    from replyguard.entrypoints.cli.app import fail, open_app
    from replyguard.service_layer.workspace.accounts import AccountError, add_user

    try:
        chosen = Role.parse(role) if role is not None else None
    except ValueError as exc:
        fail(str(exc), code=2)
    instance = open_app(ctx)
    password = _password()
    try:
        with instance.uow() as uow:
            user = add_user(uow, email, password, name=name, role=chosen)
            uow.commit()
    except AccountError as exc:
        fail(str(exc))
    finally:
        instance.close()
    _done(
        as_json,
        user,
        instance.workspace,
        f"user {user.email} ({user.role.value}) added to workspace {instance.workspace}",
    )


@users_app.command("list")
def list_(ctx: typer.Context, as_json: ListJson = False) -> None:
    """The users of the workspace, their roles and when they last signed in."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.workspace.accounts import list_users

    instance = open_app(ctx)
    with instance.uow() as uow:
        users = list_users(uow)
    instance.close()
    if as_json:
        rows = [
            {
                **_user_json(u, instance.workspace),
                "last_login_at": u.last_login_at.isoformat() if u.last_login_at else None,
            }
            for u in users
        ]
        emit_json(rows)
        return
    for user in users:
        seen = user.last_login_at.isoformat() if user.last_login_at else "never signed in"
        state = " (disabled)" if user.disabled else ""
        out.print(f"{user.email}{state}  {user.role.value}  {seen}", highlight=False)


@users_app.command("disable")
def disable(ctx: typer.Context, email: Email, as_json: AsJson = False) -> None:
    """A rep who left: they cannot sign in, their sessions end and their API tokens are revoked, now."""
    from replyguard.domain.access import Principal
    from replyguard.service_layer.workspace.account_admin import disable_user

    user = _change(ctx, email, lambda uow, uid: disable_user(uow, uid, Principal.operator()))
    _done(as_json, user, _workspace(ctx), f"{user.email} disabled: signed out everywhere, API tokens revoked")


@users_app.command("enable")
def enable(ctx: typer.Context, email: Email, as_json: AsJson = False) -> None:
    """Let a disabled user sign in again (their old API tokens stay revoked)."""
    from replyguard.domain.access import Principal
    from replyguard.service_layer.workspace.account_admin import enable_user

    user = _change(ctx, email, lambda uow, uid: enable_user(uow, uid, Principal.operator()))
    _done(as_json, user, _workspace(ctx), f"{user.email} may sign in again")


@users_app.command("remove")
def remove(
    ctx: typer.Context,
    email: Email,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask first.")] = False,
    as_json: AsJson = False,
) -> None:
    """Delete a user for good (what they did stays in the history under their address)."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, fail, out
    from replyguard.service_layer.workspace.account_admin import remove_user

    if not yes:
        if not sys.stdin.isatty():
            fail("remove deletes the user for good: pass --yes to confirm", code=2)
        typer.confirm(f"Remove {email} for good?", abort=True)
    gone = _change(ctx, email, lambda uow, uid: remove_user(uow, uid, Principal.operator()))
    if as_json:
        emit_json({"email": gone, "removed": True})
        return
    out.print(f"{gone} removed", highlight=False)


@users_app.command("set-role")
def set_role(
    ctx: typer.Context,
    email: Email,
    role: Annotated[str, typer.Argument(help=ROLE_HELP)],
    as_json: AsJson = False,
) -> None:
    """Change what a user may do."""
    from replyguard.domain.access import Principal, Role
    from replyguard.entrypoints.cli.app import fail
    from replyguard.service_layer.workspace.account_admin import set_role as change

    try:
        new = Role.parse(role)
    except ValueError as exc:
        fail(str(exc), code=2)
    user = _change(ctx, email, lambda uow, uid: change(uow, uid, new, Principal.operator()))
    _done(as_json, user, _workspace(ctx), f"{user.email} is now {user.role.value}")


@users_app.command("reset-password")
def reset_password(
    ctx: typer.Context,
    email: Email,
    generate: Annotated[
        bool, typer.Option("--generate", help="Make a random password and print it, instead of reading one.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Give a user a temporary password (read like `add`'s, or --generate); they choose their
    own at their next sign-in, and their sessions end now."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, out
    from replyguard.service_layer.workspace.account_admin import Reset
    from replyguard.service_layer.workspace.account_admin import reset_password as reset

    password = None if generate else _password()
    done: Reset = _change(ctx, email, lambda uow, uid: reset(uow, uid, Principal.operator(), password))
    if as_json:
        emit_json(
            {**_user_json(done.user, _workspace(ctx)), **({"password": done.password} if generate else {})}
        )
        return
    out.print(
        f"{done.user.email}: new temporary password; {done.sessions_ended} session(s) ended", highlight=False
    )
    if generate:
        sys.stdout.write(done.password + "\n")


@users_app.command("unlock")
def unlock(ctx: typer.Context, email: Email, as_json: AsJson = False) -> None:
    """Lift the sign-in limits of a user's account (its recent failures are forgotten)."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, out
    from replyguard.service_layer.workspace.account_admin import unlock as lift

    forgotten = _change(ctx, email, lambda uow, uid: lift(uow, uid, Principal.operator()))
    if as_json:
        emit_json({"email": email.strip().lower(), "failures_forgotten": forgotten})
        return
    out.print(f"{email.strip().lower()}: {forgotten} failed sign-in(s) forgotten", highlight=False)


@users_app.command("sessions")
def sessions(ctx: typer.Context, email: Email, as_json: ListJson = False) -> None:
    """Where a user is signed in."""
    from replyguard.entrypoints.cli.app import emit_json, out
    from replyguard.service_layer.workspace.web_sessions import list_sessions

    rows = _change(ctx, email, list_sessions)
    if as_json:
        from dataclasses import asdict

        emit_json([asdict(r) for r in rows])
        return
    for r in rows:
        seen = f"since {r.created_at.isoformat()}  seen {r.last_seen_at.isoformat()}"
        out.print(f"{r.id:>4}  {seen}  {r.ip}  {r.user_agent}", highlight=False)


@users_app.command("sign-out")
def sign_out(ctx: typer.Context, email: Email, as_json: AsJson = False) -> None:
    """End every session of a user (they sign in again; their API tokens are untouched)."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, out
    from replyguard.service_layer.workspace.account_admin import sign_out_everywhere

    ended = _change(ctx, email, lambda uow, uid: sign_out_everywhere(uow, uid, Principal.operator()))
    if as_json:
        emit_json({"email": email.strip().lower(), "sessions_ended": ended})
        return
    out.print(f"{email.strip().lower()}: {ended} session(s) ended", highlight=False)
