"""`replyguard tokens create NAME | list | revoke ID`: API tokens of the workspace.

`create` prints the token once, alone on standard output (so that `$(replyguard tokens create
ci)` captures just it); only its digest is stored.
"""

from __future__ import annotations

from typing import Annotated

import typer

from replyguard.entrypoints.cli.options import AsJson, ListJson

tokens_app = typer.Typer(no_args_is_help=True, help="API tokens of the workspace (REST API at /api/v1).")


def register(app: typer.Typer) -> None:
    app.add_typer(tokens_app, name="tokens")


@tokens_app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the token is for (unique in the workspace).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the token and its id as one JSON object on stdout.")
    ] = False,
) -> None:
    """Create a token and print it (this once)."""
    import sys

    from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app
    from replyguard.service_layer.api_tokens import TokenError, create_token

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            view, secret = create_token(uow, name, "cli")
            uow.commit()
    except TokenError as exc:
        fail(str(exc))
    finally:
        instance.close()
    err.print(
        f"token {view.name} (id {view.id}) created; copy it now, it is not shown again:", highlight=False
    )
    if as_json:
        emit_json({"id": view.id, "name": view.name, "prefix": view.prefix, "token": secret})
        return
    sys.stdout.write(secret + "\n")


@tokens_app.command("list")
def list_(ctx: typer.Context, as_json: ListJson = False) -> None:
    """The workspace's tokens, without their secrets."""
    from replyguard.entrypoints.cli.app import emit_json, open_app, out
    from replyguard.service_layer.api_tokens import list_tokens

    instance = open_app(ctx)
    with instance.uow() as uow:
        tokens = list_tokens(uow)
    instance.close()
    rows = [
        {
            "id": t.id,
            "name": t.name,
            "prefix": t.prefix,
            "created_by": t.created_by,
            "created_at": t.created_at.isoformat(),
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
        out.print(f"{r['id']:>4}  {r['prefix']}…  {r['name']}  ({state})", highlight=False)


@tokens_app.command("revoke")
def revoke(
    ctx: typer.Context,
    token_id: Annotated[int, typer.Argument(help="The token's id (`tokens list` shows them).")],
    as_json: AsJson = False,
) -> None:
    """Revoke a token: requests with it are refused from now on."""
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.service_layer.api_tokens import revoke_token
    from replyguard.service_layer.queries import NotFound

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            view = revoke_token(uow, token_id, "cli")
            uow.commit()
    except NotFound as exc:
        fail(str(exc))
    finally:
        instance.close()
    if as_json:
        emit_json({"id": view.id, "name": view.name, "revoked_at": view.revoked_at})
        return
    out.print(f"token {view.name} (id {view.id}) revoked", highlight=False)
