"""The sandbox every template renders in: Jinja's immutable sandbox, each operation spent from
the render's budget (`domain/template_budget.py`), sizes checked before values are built.

`domain/templates.py` is the way in (`render`, `check_variables`); this module is how a render
is bounded. The parsed template is rewritten before it is compiled (`_Budgeted`): every
`{% for %}` iterates through `budget_iter` and every `~` is `budget_concat`. The environment's
hooks (`call_binop`, `call_unop`, `call`, `getattr`, `getitem`, every filter and test, the
`finalize` of each printed value) spend and check.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from typing import Any, NoReturn

from jinja2 import Environment, UndefinedError, nodes
from jinja2.exceptions import SecurityError
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import missing
from jinja2.visitor import NodeTransformer

from replyguard.domain import template_budget as tb
from replyguard.domain.template_budget import MAX_RENDERED_CHARS, BudgetExceeded

_MAX_NUMBER_ARG = 10_000  # widths, counts and repeats passed to filters and methods
_MAX_RANGE = 1_000
_MAX_EXPONENT = 100
_WIDTH = re.compile(r"\d+")
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)


class NoValue(UndefinedError):
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
            raise NoValue(str(self._undefined_name))
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


def _widest(values: Iterable[Any]) -> int:
    return max((tb.weight(v) for v in values), default=0)


def _check_percent(pattern: str, args: Any) -> None:
    """`pattern % args`: no width from the arguments (`%*d`), and a bounded result, counting
    every field as wide as its width plus the widest argument."""
    _check_format(pattern)
    values = args.values() if isinstance(args, Mapping) else args if isinstance(args, tuple) else (args,)
    widest = _widest(values)
    size = len(pattern)
    for match in _PERCENT.finditer(pattern):
        width, precision, conversion = match.groups()
        if conversion == "%":
            continue
        if "*" in (width, precision):
            raise BudgetExceeded("a width taken from the arguments ('*') is not allowed (the format limit)")
        size += sum(int(n) for n in (width, precision) if n) + widest
    tb.check_size(size, "this format")


def _check_str_format(pattern: str, values: Iterable[Any]) -> None:
    """`pattern.format(...)`: no nested replacement field in a spec (`{:{}}`), a bounded result."""
    _check_format(pattern)
    widest = _widest(values)
    size = len(pattern)
    for _literal, name, spec, _conversion in string.Formatter().parse(pattern):
        if name is None:
            continue
        if spec and "{" in spec:
            raise BudgetExceeded(
                "a width taken from the arguments ('{:{}}') is not allowed (the format limit)"
            )
        size += widest + sum(int(n) for n in _WIDTH.findall(spec or ""))
    tb.check_size(size, "this format")


def _check_replace(text: Any, old: Any, new: Any) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        grows = (text.count(old) if old else len(text) + 1) * max(0, len(new) - len(old))
        tb.check_size(len(text) + grows, "replace()")


def _join_size(items: Sized, separator: Any) -> int:
    return tb.weight(items) + len(str(separator)) * len(items)


def _check_method(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The str methods that can build a text much larger than their inputs."""
    owner = getattr(func, "__self__", None)
    if not isinstance(owner, str):
        return
    name = getattr(func, "__name__", "")
    if name == "replace" and len(args) >= 2:
        _check_replace(owner, args[0], args[1])
    elif name == "join" and args and isinstance(args[0], Sized):
        tb.check_size(_join_size(args[0], owner), "join()")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        tb.check_size(len(owner) * max(1, tab if isinstance(tab, int) else 1), "expandtabs()")


def _check_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        _check_number(value)
    _check_method(func, args, kwargs)


def _bounded_items(items: Iterator[Any]) -> Iterator[Any]:
    """A lazy result (`map`, `select`...) charged item by item, bounded in total."""
    total = 0
    for item in items:
        total += tb.charge(item, "a sequence") + 2
        if total > MAX_RENDERED_CHARS:
            tb.refuse_size("a sequence")
        yield item


def _check_filter(name: str, plain: list[Any], kwargs: dict[str, Any]) -> None:
    """Before a filter runs: its input is bounded, and so is what the growing ones build."""
    first = plain[0] if plain else None
    tb.charge(first, f"the input of '{name}'")
    if name == "replace" and len(plain) >= 3:
        _check_replace(plain[0], plain[1], plain[2])
    elif name == "format" and isinstance(first, str):
        _check_percent(first, kwargs or tuple(plain[1:]))
    elif name == "join" and isinstance(first, Sized):
        tb.check_size(_join_size(first, plain[1] if len(plain) > 1 else kwargs.get("d", "")), "join")
    elif name == "indent" and isinstance(first, str):
        width = plain[1] if len(plain) > 1 else kwargs.get("width", 4)
        step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 4
        tb.check_size(len(first) + (first.count("\n") + 1) * step, "indent")
    elif name == "wordwrap" and isinstance(first, str):
        wrap = (plain[3] if len(plain) > 3 else kwargs.get("wrapstring")) or "\n"
        tb.check_size(len(first) * (1 + len(str(wrap))), "wordwrap")


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        tb.spend()
        # Filters marked pass_context / pass_environment get those first: skip them.
        plain = [a for a in args if not isinstance(a, Context | EvalContext | Environment)]
        if plain and isinstance(plain[0], Iterator) and name in ("join", "list", "sum", "unique"):
            # A lazy input is made a list (bounded by `_bounded_items`) so its size is known.
            args = tuple(list(a) if a is plain[0] else a for a in args)
            plain[0] = next(a for a in args if not isinstance(a, Context | EvalContext | Environment))
        for value in (*plain[1:], *kwargs.values()):
            _check_number(value)
        _check_filter(name, plain, kwargs)
        result = func(*args, **kwargs)
        if isinstance(result, Iterator) and not isinstance(result, str):
            return _bounded_items(result)
        tb.charge(result, f"the result of '{name}'")
        return result

    return bounded


def _counted(func: Any) -> Any:
    @functools.wraps(func)
    def counted(*args: Any, **kwargs: Any) -> Any:
        tb.spend()
        return func(*args, **kwargs)

    return counted


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > _MAX_RANGE:
        _refuse(f"range() of more than {_MAX_RANGE} items in a template")
    return numbers


def _budget_iter(iterable: Any) -> Iterator[Any]:
    """What every `{% for %}` iterates through: one operation per iteration."""
    for item in iterable:
        tb.spend()
        yield item


def _budget_concat(*parts: Any) -> str:
    """`a ~ b`: the size is known before the text is built."""
    tb.check_size(sum(tb.weight(p) for p in parts), "joining texts with '~'")
    return "".join(map(str, parts))


def _finalize(value: Any) -> Any:
    """Every value printed: a list is refused before it is turned into a huge text."""
    tb.charge(value, "a printed value")
    return value


def _check_binop(operator: str, left: Any, right: Any) -> None:
    ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and isinstance(right, int | float) and abs(right) > _MAX_EXPONENT:
        _refuse(f"the exponent {right} is too large for a template")
    if operator == "**" and ints and right > 0 and abs(left).bit_length() * right > tb.MAX_INT_BITS:
        tb.raise_int()
    if operator == "*":
        if ints and abs(left).bit_length() + abs(right).bit_length() > tb.MAX_INT_BITS:
            tb.raise_int()
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, str | list | tuple) and isinstance(times, int):
                tb.check_size(tb.weight(seq) * max(0, times), "repeating a text or list")
    if operator == "+" and isinstance(left, str | list | tuple) and type(left) is type(right):
        tb.check_size(tb.weight(left) + tb.weight(right), "adding texts or lists")
    if operator == "%" and isinstance(left, str):
        _check_percent(left, right)


class _Budgeted(NodeTransformer):
    """Rewrites a parsed template so that loops and `~` go through the budget."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("budget_iter"), [node.iter], [], None, None, lineno=node.lineno
        )
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        call = nodes.EnvironmentAttribute("budget_concat")
        return nodes.Call(call, list(node.nodes), [], None, None, lineno=node.lineno)


class _EmailSandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox (no attribute tricks, no changing lists or dicts in place) with every
    operation spent from the render's budget and bounds on what can blow up an email."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    budget_iter = staticmethod(_budget_iter)
    budget_concat = staticmethod(_budget_concat)

    def __init__(self) -> None:
        # Plain-text email: no autoescaping, keep the author's line breaks exactly.
        super().__init__(
            undefined=_MissingValue, autoescape=False, keep_trailing_newline=True, finalize=_finalize
        )
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.tests = {name: _counted(test) for name, test in self.tests.items()}
        self.globals = {"range": _range, "dict": dict, "namespace": self.globals["namespace"]}

    def _generate(self, source: nodes.Template, *args: Any, **kwargs: Any) -> str:
        return super()._generate(_Budgeted().visit(source), *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        tb.spend()
        _check_binop(operator, left, right)
        result = super().call_binop(context, operator, left, right)
        tb.check_int(result)
        return result

    def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
        tb.spend()
        return super().call_unop(context, operator, arg)

    def getattr(self, obj: Any, attribute: str) -> Any:
        tb.spend()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        tb.spend()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        tb.spend()
        _check_call(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        tb.charge(result, "the result of a call")
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        pattern: str = value.__self__
        _check_format(pattern)

        def checked(*args: Any, **kwargs: Any) -> str:
            mapping = args[0] if value.__name__ == "format_map" and args else {}
            values = [*args, *kwargs.values(), *(mapping.values() if isinstance(mapping, Mapping) else ())]
            _check_str_format(pattern, values)
            return wrapped(*args, **kwargs)

        return checked


ENV = _EmailSandbox()
