"""`replyguard threads ...`: the Reply Rescue inbox on the command line.

Thin over `service_layer.thread_views` (list, show), `decisions` (resolve, assign, snooze, done)
and `person_send` (send: the one command that sends a person's answer).
"""

import sys
from dataclasses import asdict
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from replyguard.entrypoints.cli.app import emit_json, err, fail, open_app, out
from replyguard.entrypoints.cli.options import AsJson, ListJson, ShowJson

threads_app = typer.Typer(no_args_is_help=True, help="Reply Rescue: everything that waits for a person.")

ACTIONS = (
    "resume, restart (--yes), stop, pause_until (--until), pause_others [--until], leave_others, "
    "not_a_reply, confirm [--lead], reject, sent, not_sent, send_again [--step], confirm_sender, "
    "reject_sender, resend_step, skip_step, reopen"
)


def register(app: typer.Typer) -> None:
    app.add_typer(threads_app, name="threads")


def _who(by: str | None) -> str:
    """Who acts: --by, else REPLYGUARD_USER, else the login name."""
    from replyguard.settings import acting_user

    return by or acting_user()


By = Annotated[str | None, typer.Option("--by", help="Who decides (default: REPLYGUARD_USER or the login).")]
ThreadId = Annotated[int, typer.Argument(help="The thread's id (`threads list` shows them).")]
Seen = Annotated[
    int | None,
    typer.Option("--seen", help="The thread's version you decided on (`threads show` prints it)."),
]


@threads_app.command("list")
def threads_list(
    ctx: typer.Context,
    state: Annotated[str, typer.Option("--state", help="open, snoozed, done or all")] = "open",
    product: Annotated[str | None, typer.Option("--product", help="Only this product's threads.")] = None,
    audit: Annotated[
        bool, typer.Option("--audit", help="The audit's canary threads instead (replyguard audit).")
    ] = False,
    as_json: ListJson = False,
) -> None:
    """Every thread that waits for a person (open by default), newest first."""
    from replyguard.service_layer.queries.products import ProductNotFound, require_product
    from replyguard.service_layer.rescue.thread_views import list_threads

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            if product is not None:
                require_product(uow, product)  # a typo must not look like an empty inbox
            items = list_threads(uow, instance.settings, state=state, product=product, audit=audit)
    except ValueError as exc:
        fail(str(exc), code=2)
    except ProductNotFound as exc:
        fail(str(exc))
    if as_json:
        emit_json(items)
        return
    print_table(items, f"threads: {state}")


def print_table(items: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for column in ("id", "product", "lead", "kind", "intent", "next step", "other products", "state"):
        table.add_column(column, overflow="fold")
    for t in items:
        others = ", ".join(f"{o['product']} ({o['state']})" for o in t["other_active_products"]) or "-"
        table.add_row(
            str(t["id"]),
            t["product"],
            t["lead"],
            Text(t["kind"]) + (Text(" crossed", style="bold red") if t["crossed"] else Text("")),
            t["intent_label"] or "-",
            t["recommended_next_step"],
            others,
            t["state"],
        )
    out.print(table)


@threads_app.command("show")
def threads_show(ctx: typer.Context, thread_id: ThreadId, as_json: ShowJson = False) -> None:
    """One thread: the conversation, the recommendation, the draft and the decisions so far."""
    from replyguard.service_layer.rescue.decisions import ThreadNotFound
    from replyguard.service_layer.rescue.thread_views import thread_detail

    instance = open_app(ctx)
    try:
        with instance.uow() as uow:
            detail = thread_detail(uow, thread_id, instance.settings)
    except ThreadNotFound as exc:
        fail(str(exc))
    if as_json:
        emit_json(detail)
        return
    out.print(
        f"[bold]Thread {detail['id']}[/] ({detail['state']}) — "
        f"{escape(detail['product'] or '')}, {escape(detail['campaign'] or '')}",
        markup=True,
    )
    out.print(f"Lead: {detail['lead_name']} <{detail['lead']}> ({detail['lead_state']}), {detail['company']}")
    out.print(
        f"Subject: {detail['subject']}\nKind: {detail['kind']}   Intent: {detail['intent_label'] or '-'}"
    )
    if detail["crossed"]:
        out.print("[bold red]Crossed:[/] one of our emails went out as they replied.", markup=True)
    for item in detail["conversation"]:
        out.print(
            f"\n[dim]{escape(str(item['at']))} {escape(item['from'] or '')}[/]"
            f" {escape(item['subject'] or '')}",
            markup=True,
        )
        out.print(item["text"] or "", highlight=False)
    for step in detail["unknown_steps"]:
        out.print(
            f"\n[yellow]Unknown outcome:[/] step {step['step_id']} "
            f"'{escape(step['subject'] or '')}': {escape(step['detail'] or '')}",
            markup=True,
        )
    for other in detail["other_active_products"]:
        queued = f"next email {other['next_step_at']}" if other.get("next_step_at") else "nothing queued"
        out.print(f"Also a lead of {other['product']} ({other['state']}), {queued}")
    out.print(f"\n[bold]Next step:[/] {escape(detail['recommended_next_step'] or '')}", markup=True)
    out.print(f"Actions: {', '.join(detail['actions'])}")
    out.print(f"Version: {detail['version']} (decide or answer on it: --seen {detail['version']})")
    draft = detail["draft"]
    if detail["waiting_on_them"]:
        out.print(
            "\n[bold]Answered:[/] the thread waits on them (threads send --another only on purpose)",
            markup=True,
        )
        return
    out.print(
        f"\n[bold]Draft[/] ({escape(str(draft['source']))}; "
        f"only you can send it: threads send {detail['id']})",
        markup=True,
    )
    if draft.get("note"):
        out.print(f"Note: {draft['note']}", highlight=False, markup=False)
    out.print(f"Subject: {draft['subject']}\n{draft['body']}", highlight=False)


@threads_app.command("send")
def threads_send(
    ctx: typer.Context,
    thread_id: ThreadId,
    body_file: Annotated[
        Path | None, typer.Option("--body-file", help="The answer's text (default: the draft as shown).")
    ] = None,
    subject: Annotated[
        str | None, typer.Option("--subject", help="The answer's subject (default: Re: their subject).")
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="Idempotency key (default: from the text).")
    ] = None,
    seen: Seen = None,
    another: Annotated[
        bool, typer.Option("--another", help="Send another answer although one went out on this version.")
    ] = False,
    by: By = None,
    as_json: AsJson = False,
) -> None:
    """Send your answer from the thread's mailbox, threaded. Never resumes the sequence.

    It is sent only on the version you saw (--seen; `threads show` prints it): without
    --body-file, the draft of that version, never one computed for a newer message."""
    from replyguard.service_layer.rescue.decisions import ThreadNotFound
    from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, send_reply
    from replyguard.service_layer.rescue.thread_versions import VersionChanged
    from replyguard.service_layer.rescue.thread_views import draft_of_version

    instance = open_app(ctx)
    try:
        seen = _seen_or_ask(instance, thread_id, seen, "send your answer")
        if body_file is not None:
            body = _read(body_file)
        else:
            with instance.uow() as uow:
                # The draft is read with the version: a newer message refuses, never redrafts.
                body = draft_of_version(uow, thread_id, seen).body
        result = send_reply(
            instance, PersonReply(thread_id, body, _who(by), subject, key, seen=seen, another=another)
        )
    except (ThreadNotFound, SendRefused, VersionChanged) as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc), code=2)
    finally:
        instance.close()
    if as_json:
        emit_json({"thread_id": thread_id, **asdict(result)})
    if not result.duplicate and result.state != "sent":
        fail(f"not sent ({result.state}): {result.detail}")
    if as_json:
        return
    if result.duplicate:
        out.print(f"already {result.state} (same answer, send {result.send_id}): nothing sent again")
    else:
        out.print(f"sent to {result.to} as {result.message_id}")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file", code=2)
    except UnicodeDecodeError as exc:
        fail(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})", code=2)


def _seen_or_ask(instance: Any, thread_id: int, seen: int | None, what: str) -> int:
    """The version the person saw. An email may go out only on one: without --seen, a terminal
    is shown the newest message and asked; anything else is refused."""
    if seen is not None:
        return seen
    from replyguard.service_layer.rescue.thread_views import thread_detail

    if not sys.stdin.isatty():
        fail(
            f"to {what}, say which version of thread {thread_id} you saw: --seen VERSION "
            f"(`threads show {thread_id}` prints it); nothing was done"
        )
    with instance.uow() as uow:
        detail = thread_detail(uow, thread_id, instance.settings)
    theirs = [i for i in detail["conversation"] if str(i["from"]).startswith("theirs")]
    if theirs:
        newest = theirs[-1]
        out.print(f"Newest message ({newest['at']}, {newest['subject'] or ''}):", highlight=False)
        out.print(newest["text"] or "", highlight=False)
    out.print(f"Lead {detail['lead']} is {detail['lead_state']}; thread version {detail['version']}.")
    if not typer.confirm(f"Having read this, {what}?", default=False):
        fail("not confirmed: nothing was done")
    return int(detail["version"])


def _decide(
    ctx: typer.Context,
    thread_id: int,
    action: str,
    as_json: bool = False,
    seen: int | None = None,
    **kwargs: Any,
) -> None:
    from replyguard.domain.thread_actions import SENDS
    from replyguard.service_layer.rescue.decisions import (
        DecisionError,
        Request,
        ThreadNotFound,
        VersionChanged,
        decide,
    )

    instance = open_app(ctx)
    try:
        if action in SENDS:
            seen = _seen_or_ask(
                instance, thread_id, seen, f"{action.replace('_', ' ')}, which lets email go out"
            )
        with instance.uow() as uow:
            result = decide(uow, thread_id, Request(action=action, seen=seen, **kwargs), instance.settings)
            uow.commit()
    except ThreadNotFound as exc:
        fail(str(exc))
    except VersionChanged as exc:
        if as_json:
            emit_json(exc.to_json())
        fail(str(exc))
    except DecisionError as exc:
        fail(str(exc))
    if as_json:
        emit_json(result.to_json())
        return
    out.print(f"thread {thread_id}: {result.message}", highlight=False)
    for step in result.planned:
        out.print(
            f"  step {step.position} of {step.campaign}: '{step.subject}' at {step.due_at:%a %d %b %H:%M} UTC"
        )


def _date(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        fail(f"--until must be a date like 2026-12-24, got {value!r}", code=2)


@threads_app.command("resolve")
def threads_resolve(
    ctx: typer.Context,
    thread_id: ThreadId,
    action: Annotated[str, typer.Option("--action", help=ACTIONS)],
    until: Annotated[
        str | None, typer.Option("--until", help="pause_until, pause_others: the day to resume (YYYY-MM-DD)")
    ] = None,
    lead: Annotated[str | None, typer.Option("--lead", help="confirm: the candidate's email")] = None,
    step: Annotated[int | None, typer.Option("--step", help="unknown outcomes: the step id")] = None,
    seen: Seen = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="restart: yes, send again to a lead a person stopped.")
    ] = False,
    by: By = None,
    as_json: AsJson = False,
) -> None:
    """Decide: resume, stop, pause, confirm/reject a probable reply, resolve an unknown outcome...

    Decided on the version you saw (--seen; `threads show` prints it): if the thread moved
    since, nothing is done and you are told what changed (exit 1)."""
    from replyguard.service_layer.rescue.decisions import known_actions

    name = action.replace("-", "_")
    if name not in known_actions():
        fail(f"unknown action {action!r}; one of {', '.join(sorted(known_actions()))}", code=2)
    if name == "restart" and not yes:
        if not sys.stdin.isatty():
            fail("restart sends again to a lead a person stopped: confirm it with --yes; nothing was done")
        if not typer.confirm("This lead was stopped by a person. Send its sequence again?", default=False):
            fail("not confirmed: nothing was done")
    _decide(
        ctx,
        thread_id,
        name,
        as_json,
        seen,
        confirmed=name == "restart",  # asked above: --yes, or yes on the terminal
        by=_who(by),
        until=_date(until),
        lead=lead,
        step_id=step,
    )


@threads_app.command("assign")
def threads_assign(
    ctx: typer.Context,
    thread_id: ThreadId,
    to: Annotated[
        str, typer.Option("--to", help="The user of the workspace who takes the thread (their address).")
    ],
    by: By = None,
    as_json: AsJson = False,
) -> None:
    """Give the thread to a person."""
    _decide(ctx, thread_id, "assign", as_json, by=_who(by), to=to)


@threads_app.command("snooze")
def threads_snooze(
    ctx: typer.Context,
    thread_id: ThreadId,
    until: Annotated[str, typer.Option("--until", help="YYYY-MM-DD or an ISO-8601 time")],
    by: By = None,
    as_json: AsJson = False,
) -> None:
    """Put the thread aside until a time; it comes back open by itself."""
    try:
        when = datetime.fromisoformat(until.replace("Z", "+00:00"))
    except ValueError:
        fail(f"--until must be a date or time like 2026-12-24 or 2026-12-24T09:00, got {until!r}", code=2)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    _decide(ctx, thread_id, "snooze", as_json, by=_who(by), until_at=when)


@threads_app.command("done")
def threads_done(ctx: typer.Context, thread_id: ThreadId, by: By = None, as_json: AsJson = False) -> None:
    """Nothing more waits for a person here."""
    _decide(ctx, thread_id, "done", as_json, by=_who(by))


@threads_app.command("draft")
def threads_draft(ctx: typer.Context, thread_id: ThreadId, as_json: AsJson = False) -> None:
    """Ask the configured model (REPLYGUARD_MODEL_URL) for a draft now."""
    from replyguard.service_layer.rescue.drafting import draft_thread

    instance = open_app(ctx)
    client = instance.model_client()
    if client is None:
        fail("no model configured: set REPLYGUARD_MODEL_URL (an OpenAI-compatible API base)", code=2)
    try:
        ok = draft_thread(instance, client, thread_id)
    except LookupError as exc:
        fail(str(exc))
    finally:
        client.close()
    if as_json:
        emit_json({"thread_id": thread_id, "drafted": ok})
    if not ok:
        err.print("the model failed; the template draft stays")
    elif not as_json:
        out.print("draft written")
