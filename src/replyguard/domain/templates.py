"""Email templates: sandboxed Jinja2, strict about values that are printed.

A template may only use the lead fields below (plus custom CSV columns). An unknown name is an
error when the campaign is created. A field a lead has no value for (missing or blank) may be
tested (`{% if title %}`) or given a default (`{{ first_name | default('there') }}`); printing
it as it is makes the render fail for that lead, so no email is ever half-rendered.

Every failure of a template at render time (a missing value, division by zero, an overflow,
runaway recursion, an output too large, `include`/`extends`) is a `TemplateError` naming where:
the caller skips that one lead with the reason, never crashes. Campaign authors are trusted
operators, but mistakes happen; the limits below turn the likely ones into clear errors. A
template can still spend CPU time in nested loops (`range` is capped at 1,000 items); the
trial render at `campaign create` runs every template once before any lead is enrolled.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from jinja2 import Environment, TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import missing

STANDARD_FIELDS: frozenset[str] = frozenset(
    {"first_name", "last_name", "full_name", "company", "title", "email", "timezone", "owner"}
)
#: The longest template source (one subject or body) a campaign may hold.
MAX_TEMPLATE_CHARS = 20_000
#: The longest rendered text; an email body beyond this is a template mistake.
MAX_RENDERED_CHARS = 200_000
_MAX_NUMBER_ARG = 10_000  # widths, counts and repeats passed to filters and methods
_MAX_RANGE = 1_000
_MAX_EXPONENT = 100
_WIDTH = re.compile(r"\d+")
_FORBIDDEN = (nodes.Include, nodes.Extends, nodes.Import, nodes.FromImport)


class TemplateError(ValueError):
    pass


class _NoValue(UndefinedError):
    """A lead field with no value was printed."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no value for {name}")
        self.name = name


class _MissingValue(Undefined):
    """A field the lead has no value for: false in tests, replaced by `default`, and an error
    as soon as it is used as a value — printed, added, multiplied, filtered (StrictUndefined
    would also refuse `{% if title %}`). The error names the field."""

    __slots__ = ()

    def _fail_with_undefined_error(self, *args: Any, **kwargs: Any) -> NoReturn:
        if self._undefined_hint is None and self._undefined_name is not None and _is_missing_var(self):
            raise _NoValue(str(self._undefined_name))
        super()._fail_with_undefined_error(*args, **kwargs)
        raise AssertionError("unreachable")  # pragma: no cover - the line above raises

    # Jinja binds these to the base class's method: bind them to ours.
    __add__ = __radd__ = __sub__ = __rsub__ = _fail_with_undefined_error
    __mul__ = __rmul__ = __div__ = __rdiv__ = _fail_with_undefined_error
    __truediv__ = __rtruediv__ = _fail_with_undefined_error
    __floordiv__ = __rfloordiv__ = _fail_with_undefined_error
    __mod__ = __rmod__ = _fail_with_undefined_error
    __pos__ = __neg__ = _fail_with_undefined_error
    __call__ = __getitem__ = _fail_with_undefined_error
    __lt__ = __le__ = __gt__ = __ge__ = _fail_with_undefined_error
    __int__ = __float__ = __complex__ = _fail_with_undefined_error
    __pow__ = __rpow__ = _fail_with_undefined_error

    def __str__(self) -> str:
        self._fail_with_undefined_error()
        return ""  # pragma: no cover - the line above raises


def _is_missing_var(value: Undefined) -> bool:
    return value._undefined_obj is missing


def _refuse(why: str) -> NoReturn:
    raise SecurityError(why)


def _check_number(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_NUMBER_ARG:
        _refuse(f"the number {value} is too large for a template")


def _check_format(pattern: str) -> None:
    """`"%0999999d" % 1` and `"{:999999}".format(1)` build huge strings: cap field widths."""
    if any(len(n) > 6 or int(n) > _MAX_NUMBER_ARG for n in _WIDTH.findall(pattern)):
        _refuse("a format width in the template is too large")


def _check_replace(text: Any, old: Any, new: Any) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        grows = (text.count(old) if old else len(text) + 1) * max(0, len(new) - len(old))
        if len(text) + grows > MAX_RENDERED_CHARS:
            _refuse("replace() would build a text too large for an email")


def _check_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        _check_number(value)
    if getattr(func, "__name__", "") == "replace":
        owner = getattr(func, "__self__", None)
        if isinstance(owner, str) and len(args) >= 2:
            _check_replace(owner, args[0], args[1])


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        # Filters marked pass_context / pass_environment get those first: skip them.
        plain = [a for a in args if not isinstance(a, Context | EvalContext | Environment)]
        _check_call(func, (), kwargs)
        for value in plain[1:]:
            _check_number(value)
        if name == "replace" and len(plain) >= 3:
            _check_replace(plain[0], plain[1], plain[2])
        if name == "format" and plain and isinstance(plain[0], str):
            _check_format(plain[0])
        return func(*args, **kwargs)

    return bounded


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > _MAX_RANGE:
        _refuse(f"range() of more than {_MAX_RANGE} items in a template")
    return numbers


class _EmailSandbox(SandboxedEnvironment):
    """Jinja's sandbox (no attribute tricks) with bounds on what can blow up an email."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self) -> None:
        # Plain-text email: no autoescaping, keep the author's line breaks exactly.
        super().__init__(undefined=_MissingValue, autoescape=False, keep_trailing_newline=True)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.globals = {"range": _range, "dict": dict, "namespace": self.globals["namespace"]}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > _MAX_EXPONENT:
            _refuse(f"the exponent {right} is too large for a template")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                repeat = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if repeat and len(seq) * times > MAX_RENDERED_CHARS:
                    _refuse("repeating text that often would build a text too large for an email")
        if operator == "%" and isinstance(left, str):
            _check_format(left)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_call(__obj, args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_format(value.__self__)
        return wrapped


_ENV = _EmailSandbox()


def variables_of(source: str, where: str) -> set[str]:
    """The variable names a template reads; TemplateError naming `where` on a syntax error,
    a template too long, or a tag that would reach outside the template."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateError(f"{where}: longer than {MAX_TEMPLATE_CHARS} characters")
    try:
        tree = _ENV.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"{where}: template syntax error on line {exc.lineno}: {exc.message}") from exc
    for node in tree.find_all(_FORBIDDEN):
        tag = type(node).__name__.lower().replace("fromimport", "import")
        raise TemplateError(f"{where}: '{tag}' is not allowed in an email template (line {node.lineno})")
    return set(meta.find_undeclared_variables(tree))


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
    return _ENV.from_string(source)


def render(source: str, values: Mapping[str, str | None], where: str) -> str:
    """Render for one lead, or raise TemplateError naming `where` and every missing value.

    A blank value counts as missing: it may be tested or defaulted, never printed."""
    used = variables_of(source, where)
    context = {k: v for k, v in values.items() if v is not None and v.strip()}
    absent: list[str] = []
    # Each render stops at the first missing value it prints; fill it in and go on, so that
    # one error names every missing field (at most one more render per variable).
    for _ in range(len(used) + 1):
        try:
            text = _render_bounded(_compiled(source), context)
        except _NoValue as exc:
            absent.append(exc.name)
            context[exc.name] = "…"
            continue
        except TemplateError as exc:
            raise TemplateError(f"{where}: {exc}") from exc
        if not absent:
            return text
        break
    raise TemplateError(f"{where}: no value for {', '.join(sorted(absent))}")


def _render_bounded(template: Any, context: dict[str, str]) -> str:
    pieces: list[str] = []
    size = 0
    try:
        for piece in template.generate(**context):
            size += len(piece)
            if size > MAX_RENDERED_CHARS:
                raise TemplateError(f"renders to more than {MAX_RENDERED_CHARS} characters")
            pieces.append(piece)
    except (_NoValue, TemplateError):
        raise
    except SecurityError as exc:
        # The sandbox refused an attribute trick or a limit: a bad template, not a crash.
        raise TemplateError(f"not allowed in a template: {exc.message}") from exc
    except UndefinedError as exc:
        raise TemplateError(str(exc.message)) from exc
    except RecursionError as exc:
        raise TemplateError("the template calls itself without end") from exc
    except Exception as exc:
        raise TemplateError(f"cannot be rendered: {exc.__class__.__name__}: {exc}") from exc
    return "".join(pieces)
