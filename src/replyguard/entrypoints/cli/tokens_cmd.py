"""`replyguard tokens create NAME | list | revoke ID`: API tokens of the workspace.

`create` prints the token once, alone on standard output (so that `$(replyguard tokens create
ci)` captures just it); only its digest is stored. The command line is the operator: its
tokens act for nobody in particular (`--for EMAIL` makes one act for a user: never more than
their role, dead when they are disabled), with the scope asked for (`read` by default).
"""

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from replyguard.entrypoints.cli.options import AsJson, ListJson

tokens_app = typer.Typer(no_args_is_help=True, help="API tokens of the workspace (REST API at /api/v1).")


def register(app: typer.Typer) -> None:
    app.add_typer(tokens_app, name="tokens")


def _expiry(text: str, now: datetime) -> datetime:
    """`90d` (days from now) or a date/time (ISO 8601, UTC without a zone)."""
    text = text.strip()
    if text[:-1].isdigit() and text.endswith("d"):
        return now + timedelta(days=int(text[:-1]))
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return found if found.tzinfo else found.replace(tzinfo=UTC)


@tokens_app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the token is for (unique in the workspace).")],
    scope: Annotated[
        str, typer.Option("--scope", help="read (sees everything), write (the daily work) or admin.")
    ] = "read",
    expires: Annotated[
        str | None, typer.Option("--expires", help="When it stops working: 90d, or a date like 2027-06-30.")
    ] = None,
    for_user: Annotated[
        str | None, typer.Option("--for", help="The user it acts for (it dies with their account).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the token and its id as one JSON object on stdout.")
    ] = False,
) -> None:
    """Create a token and print it (this once)."""
    import sys

    from replyguard.domain.access import AccessDenied, Level, Principal
    from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app
    from replyguard.service_layer.queries import NotFound
    from replyguard.service_layer.workspace.accounts import user_by_email
    from replyguard.service_layer.workspace.api_tokens import TokenError, create_token

    instance = open_app(ctx)
    try:
        level = Level.parse(scope)
        until = _expiry(expires, instance.clock.now()) if expires else None
    except ValueError as exc:
        fail(f"{exc} (--scope read|write|admin; --expires 90d or 2027-06-30)", code=2)
    try:
        with instance.uow() as uow:
            user = user_by_email(uow, for_user).id if for_user else None
            view, secret = create_token(
                uow, name, Principal.operator(), scope=level, expires_at=until, for_user=user
            )
            uow.commit()
    except (TokenError, AccessDenied, NotFound) as exc:
        fail(str(exc))
    finally:
        instance.close()
    err.print(
        f"token {view.name} (id {view.id}, {view.scope}) created; copy it now, it is not shown again:",
        highlight=False,
    )
    if as_json:
        emit_json({"id": view.id, "name": view.name, "prefix": view.prefix, "scope": view.scope,
                   "expires_at": view.expires_at, "token": secret})  # fmt: skip
        return
    sys.stdout.write(secret + "\n")


@tokens_app.command("list")
def list_(ctx: typer.Context, as_json: ListJson = False) -> None:
    """The workspace's tokens, without their secrets."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.workspace.api_tokens import list_tokens

    instance = open_app(ctx)
    with instance.uow() as uow:
        tokens = list_tokens(uow, Principal.operator())
    instance.close()
    rows = [
        {
            "id": t.id,
            "name": t.name,
            "prefix": t.prefix,
            "scope": t.scope,
            "user": t.user,
            "parent_id": t.parent_id,
            "created_by": t.created_by,
            "created_at": t.created_at.isoformat(),
            "expires_at": t.expires_at.isoformat() if t.expires_at else None,
            "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
            "revoked": t.revoked_at is not None,
        }
        for t in tokens
    ]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        state = "revoked" if r["revoked"] else f"last used {r['last_used_at'] or 'never'}"
        owner = f", for {r['user']}" if r["user"] else ""
        out.print(
            f"{r['id']:>4}  {r['prefix']}…  {r['name']}  {r['scope']}{owner}  ({state})", highlight=False
        )


@tokens_app.command("revoke")
def revoke(
    ctx: typer.Context,
    token_id: Annotated[int, typer.Argument(help="The token's id (`tokens list` shows them).")],
    as_json: AsJson = False,
) -> None:
    """Revoke a token, and every token made with it: requests with them are refused from now on."""
    from replyguard.domain.access import Principal
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.queries import NotFound
    from replyguard.service_layer.workspace.api_tokens import revoke_token

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            view = revoke_token(uow, token_id, Principal.operator())
            uow.commit()
    except NotFound as exc:
        fail(str(exc))
    finally:
        instance.close()
    if as_json:
        emit_json({"id": view.id, "name": view.name, "revoked_at": view.revoked_at})
        return
    out.print(f"token {view.name} (id {view.id}) revoked", highlight=False)
