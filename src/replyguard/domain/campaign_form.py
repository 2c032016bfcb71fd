"""A campaign written in a web form, turned into the same TOML a file would hold.

There is one way to create a campaign (`parse_campaign` on TOML): the form only writes the
file for the person, so its errors are the file's errors (`campaign.steps[2].wait: ...`) and
the campaign page can show the source it was made from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepFields:
    wait: str
    subject: str
    body: str
    approval: bool


@dataclass(frozen=True, slots=True)
class CampaignFields:
    product: str
    name: str
    mailbox: str
    from_name: str
    owner: str
    timezone: str
    days: Sequence[str]
    start: str
    end: str
    daily_cap: str
    steps: Sequence[StepFields]


def _s(value: str) -> str:
    # A JSON string is a valid TOML basic string: the same quotes and escapes (\", \\, \n,
    # \uXXXX for control characters), and any other character as itself.
    return json.dumps(value, ensure_ascii=False)


def campaign_toml(f: CampaignFields) -> str:
    """The TOML of the form. Steps with an empty body are left out (unused rows of the form);
    a cap that is not a number is written as text, so that the parser names the field. An
    empty sender name or cap is left out: an existing mailbox's own settings apply (a new
    mailbox needs them, and the parser says so)."""
    cap = f.daily_cap.strip()
    lines = [
        f"product = {_s(f.product.strip())}",
        "",
        "[campaign]",
        f"name = {_s(f.name.strip())}",
        f"mailbox = {_s(f.mailbox.strip())}",
        *([f"from_name = {_s(f.from_name.strip())}"] if f.from_name.strip() else []),
        f"owner = {_s(f.owner.strip())}",
        f"timezone = {_s(f.timezone.strip())}",
        f"send_window = {{ days = [{', '.join(_s(d) for d in f.days)}], "
        f"start = {_s(f.start.strip())}, end = {_s(f.end.strip())} }}",
        *([f"daily_cap = {cap if cap.isdigit() else _s(cap)}"] if cap else []),
    ]
    for step in f.steps:
        if not step.body.strip():
            continue
        lines += ["", "[[campaign.steps]]", f"wait = {_s(step.wait.strip() or '0d')}"]
        if step.subject.strip():
            lines.append(f"subject = {_s(step.subject.strip())}")
        lines.append(f"body = {_s(step.body.replace(chr(13) + chr(10), chr(10)).strip())}")
        if step.approval:
            lines.append("approval = true")
    return "\n".join(lines) + "\n"
