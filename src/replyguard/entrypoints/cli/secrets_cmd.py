"""`replyguard secrets new-key|rotate`: the key that encrypts mailbox passwords at rest.

Rotation, in three moves: make a key (`new-key`), put it first in REPLYGUARD_SECRET_KEY
(comma-separated, the old key after it) or first in the key file, run `rotate` (every stored
secret is encrypted again with the new key), then drop the old key. No stored secret is
ever printed; `new-key` prints only the fresh key it made.
"""

import typer

from replyguard.entrypoints.cli.options import AsJson

secrets_app = typer.Typer(no_args_is_help=True, help="The key that encrypts mailbox passwords at rest.")


def register(app: typer.Typer) -> None:
    """Add the `secrets` commands to the CLI."""
    app.add_typer(secrets_app, name="secrets")


@secrets_app.command("new-key")
def new_key_command(as_json: AsJson = False) -> None:
    """Make a fresh random key for REPLYGUARD_SECRET_KEY (printed once; keep it safe)."""
    from replyguard.adapters.secret_box import new_key
    from replyguard.entrypoints.cli.app import emit_json, out

    key = new_key()
    if as_json:
        emit_json({"key": key})
        return
    out.print(key, highlight=False)


@secrets_app.command("rotate")
def rotate_command(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Encrypt every stored secret again with the first key of REPLYGUARD_SECRET_KEY (every
    workspace of the database); afterwards the other keys may be dropped."""
    from replyguard.adapters.secret_box import SecretUnreadable
    from replyguard.entrypoints.cli.app import emit_json, fail, open_app, out
    from replyguard.entrypoints.cli.errors import EXIT_USAGE
    from replyguard.service_layer.workspace.mailbox_accounts import rotate_secrets

    instance = open_app(ctx)
    box = instance.secret_box()
    if box is None:
        fail(
            "no secret key is configured: set REPLYGUARD_SECRET_KEY to the new key, then the old"
            " one, comma-separated",
            code=EXIT_USAGE,
        )
    try:
        count = rotate_secrets(instance.scoped, box)
    except SecretUnreadable as exc:
        fail(str(exc))
    if as_json:
        emit_json({"rotated": count})
        return
    out.print(f"{count} secret(s) encrypted again with the newest key; older keys may now be dropped")
