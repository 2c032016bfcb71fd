"""Email templates: sandboxed Jinja2 with a hard budget, strict about values that are printed.

One engine renders every template a workspace user writes: the steps' subjects and bodies and
the `[campaign.drafts]` answers (`domain/drafts.py`). A template may only use the lead fields
below (plus custom CSV columns). An unknown name is an error when the campaign is created. A
field a lead has no value for (missing or blank) may be tested (`{% if title %}`) or given a
default (`{{ first_name | default('there') }}`); printing it as it is makes the render fail for
that lead, so no email is ever half-rendered.

Every render runs against a budget (`domain/template_budget.py`): the sandbox
(`domain/template_sandbox.py`) counts each loop iteration (every `{% for %}` iterates through
`budget_iter`, put in by rewriting the parsed template), call, operator, attribute, item,
filter and test, bounds integers (`*`, `**`, `+`),
and checks the size of a text or list *before* building it (`~`, `+`, `*`, `join`, `format` and
`%` with their widths, `replace`, `indent`, `wordwrap`, `expandtabs`) and every value printed.
Every failure at render time (a missing value, division by zero, a limit, runaway recursion,
`include`/`extends`) is a `TemplateError` naming where and, for a limit, which one: the caller
skips that one lead with the reason, never crashes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.exceptions import SecurityError

from replyguard.domain import template_budget as tb
from replyguard.domain.template_budget import MAX_RENDERED_CHARS, Budget, BudgetExceeded, TemplateError
from replyguard.domain.template_sandbox import ENV, NoValue

__all__ = [
    "MAX_RENDERED_CHARS",
    "MAX_TEMPLATE_CHARS",
    "STANDARD_FIELDS",
    "Budget",
    "BudgetExceeded",
    "TemplateError",
    "check_variables",
    "render",
    "variables_of",
]

STANDARD_FIELDS: frozenset[str] = frozenset(
    {"first_name", "last_name", "full_name", "company", "title", "email", "timezone", "owner"}
)
#: The longest template source (one subject or body) a campaign may hold.
MAX_TEMPLATE_CHARS = 20_000
_FORBIDDEN = (nodes.Include, nodes.Extends, nodes.Import, nodes.FromImport)


def variables_of(source: str, where: str) -> set[str]:
    """The variable names a template reads; TemplateError naming `where` on a syntax error,
    a template too long, or a tag that would reach outside the template."""
    found = _variables(source)
    if isinstance(found, str):
        raise TemplateError(f"{where}: {found}")
    return set(found)


@functools.lru_cache(maxsize=512)
def _variables(source: str) -> frozenset[str] | str:
    """The variables of `source`, or why it cannot be used; cached, as a campaign's templates
    are rendered once per lead (parsing was most of the cost of a render)."""
    if len(source) > MAX_TEMPLATE_CHARS:
        return f"longer than {MAX_TEMPLATE_CHARS} characters"
    try:
        tree = ENV.parse(source)
    except TemplateSyntaxError as exc:
        return f"template syntax error on line {exc.lineno}: {exc.message}"
    for node in tree.find_all(_FORBIDDEN):
        tag = type(node).__name__.lower().replace("fromimport", "import")
        return f"'{tag}' is not allowed in an email template (line {node.lineno})"
    return frozenset(meta.find_undeclared_variables(tree))


def check_variables(source: str, where: str, extra_fields: Iterable[str] = ()) -> set[str]:
    used = variables_of(source, where)
    known = STANDARD_FIELDS | set(extra_fields)
    unknown = sorted(used - known)
    if unknown:
        raise TemplateError(
            f"{where}: unknown template variable(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    return used


@functools.lru_cache(maxsize=512)
def _compiled(source: str) -> Any:
    return ENV.from_string(source)


def render(
    source: str,
    values: Mapping[str, str | None],
    where: str,
    *,
    budget: Budget | None = None,
    blanks: bool = False,
) -> str:
    """Render for one lead, or raise TemplateError naming `where` and every missing value, or
    the limit of the budget it ran out of (one budget for the whole call: a fresh `Budget()`
    unless one is given, which tests and benchmarks read afterwards).

    A blank value counts as missing: it may be tested or defaulted, never printed — unless
    `blanks` (a draft, which a person edits before it is sent, prints a blank as nothing)."""
    used = variables_of(source, where)
    if blanks:
        context = {k: v or "" for k, v in values.items()}
    else:
        context = {k: v for k, v in values.items() if v is not None and v.strip()}
    absent: list[str] = []
    token = tb.activate(budget if budget is not None else Budget())
    try:
        # Each render stops at the first missing value it prints; fill it in and go on, so that
        # one error names every missing field (at most one more render per variable).
        for _ in range(len(used) + 1):
            try:
                text = _render_bounded(_compiled(source), context)
            except NoValue as exc:
                absent.append(exc.name)
                context[exc.name] = "…"
                continue
            except TemplateError as exc:
                raise type(exc)(f"{where}: {exc}") from exc
            if not absent:
                return text
            break
    finally:
        tb.deactivate(token)
    raise TemplateError(f"{where}: no value for {', '.join(sorted(absent))}")


def _render_bounded(template: Any, context: dict[str, str]) -> str:
    pieces: list[str] = []
    size = 0
    try:
        for piece in template.generate(**context):
            size += len(piece)
            if size > MAX_RENDERED_CHARS:
                raise BudgetExceeded(
                    f"renders to more than {MAX_RENDERED_CHARS:,} characters (the size limit of a template)"
                )
            pieces.append(piece)
    except (NoValue, TemplateError):
        raise
    except SecurityError as exc:
        # The sandbox refused an attribute trick or a limit: a bad template, not a crash.
        raise TemplateError(f"not allowed in a template: {exc.message}") from exc
    except UndefinedError as exc:
        raise TemplateError(str(exc.message)) from exc
    except RecursionError as exc:
        raise TemplateError("the template calls itself without end") from exc
    except MemoryError as exc:
        raise BudgetExceeded("ran out of memory") from exc
    except Exception as exc:
        raise TemplateError(f"cannot be rendered: {exc.__class__.__name__}: {exc}") from exc
    return "".join(pieces)
