"""`replyguard users add EMAIL` and `users list`: the people who sign in to the web workspace.

The password is read from standard input when it is not a terminal (one line: `make run`,
scripts, secrets managers), and prompted twice, hidden, otherwise. It never appears in the
process list, the shell history or a log.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from replyguard.entrypoints.cli.options import AsJson

users_app = typer.Typer(no_args_is_help=True, help="People who sign in to the web workspace.")


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")


def _password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    value: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


@users_app.command("add")
def add(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="The address the user signs in with.")],
    name: Annotated[str, typer.Option("--name", help="Shown in the web workspace.")] = "",
    as_json: AsJson = False,
) -> None:
    """Create a user of the workspace (--workspace); the password comes from stdin or a prompt."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.accounts import AccountError, add_user

    instance = open_app(ctx)
    password = _password()
    try:
        with instance.uow() as uow:
            user = add_user(uow, email, password, name=name)
            uow.commit()
    except AccountError as exc:
        fail(str(exc))
    finally:
        instance.close()
    if as_json:
        emit_json({"id": user.id, "email": user.email, "name": user.name, "workspace": instance.workspace})
        return
    out.print(f"user {user.email} added to workspace {instance.workspace}", highlight=False)


@users_app.command("list")
def list_(ctx: typer.Context) -> None:
    """The users of the workspace."""
    from replyguard.entrypoints.cli.app import open_app, out
    from replyguard.service_layer.accounts import list_users

    instance = open_app(ctx)
    with instance.uow() as uow:
        users = list_users(uow)
    instance.close()
    for user in users:
        seen = user.last_login_at.isoformat() if user.last_login_at else "never signed in"
        state = " (disabled)" if user.disabled else ""
        out.print(f"{user.email}{state}  {seen}", highlight=False)
