"""Options several commands share, each with its help text: `replyguard X --help` describes
every option (tests/e2e/test_cli_bad_input.py checks that none is left without)."""

from typing import Annotated

import typer

AsJson = Annotated[
    bool,
    typer.Option("--json", help="Print the result as one JSON object on stdout (and nothing else there)."),
]
ListJson = Annotated[bool, typer.Option("--json", help="Print the list as JSON on stdout.")]
ShowJson = Annotated[bool, typer.Option("--json", help="Print it as JSON on stdout.")]
AllowLocalhostUnsubscribe = Annotated[
    bool,
    typer.Option(
        "--allow-localhost-unsubscribe",
        help="Send through SMTP although REPLYGUARD_PUBLIC_URL is not set: the List-Unsubscribe "
        "links then point at http://localhost:8000, which no recipient can reach.",
    ),
]
