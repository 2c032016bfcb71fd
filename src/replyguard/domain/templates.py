"""Email templates: sandboxed Jinja2, strict about variables.

A template may only use the lead fields below (plus custom CSV columns). An unknown name is an
error when the campaign is created; a value a lead does not have is an error when that lead is
enrolled. No email is ever half-rendered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError, meta
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

STANDARD_FIELDS: frozenset[str] = frozenset(
    {"first_name", "last_name", "full_name", "company", "title", "email", "timezone", "owner"}
)


class TemplateError(ValueError):
    pass


def _environment() -> SandboxedEnvironment:
    # Plain-text email: no autoescaping, keep the author's line breaks exactly.
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


_ENV = _environment()


def variables_of(source: str, where: str) -> set[str]:
    """The variable names a template reads; TemplateError naming `where` on a syntax error."""
    try:
        return set(meta.find_undeclared_variables(_ENV.parse(source)))
    except TemplateSyntaxError as exc:
        raise TemplateError(f"{where}: template syntax error on line {exc.lineno}: {exc.message}") from exc


def check_variables(source: str, where: str, extra_fields: Iterable[str] = ()) -> set[str]:
    used = variables_of(source, where)
    known = STANDARD_FIELDS | set(extra_fields)
    unknown = sorted(used - known)
    if unknown:
        raise TemplateError(
            f"{where}: unknown template variable(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    return used


def render(source: str, values: Mapping[str, str | None], where: str) -> str:
    """Render with every used variable present and non-empty, or raise TemplateError."""
    missing = sorted(n for n in variables_of(source, where) if not (values.get(n) or "").strip())
    if missing:
        raise TemplateError(f"{where}: no value for {', '.join(missing)}")
    try:
        return _ENV.from_string(source).render(**{k: v for k, v in values.items() if v})
    except UndefinedError as exc:  # pragma: no cover - guarded by the check above
        raise TemplateError(f"{where}: {exc.message}") from exc
    except SecurityError as exc:
        # The sandbox refused an attribute trick (`''.__class__`): a bad template, not a crash.
        raise TemplateError(f"{where}: not allowed in a template: {exc.message}") from exc
