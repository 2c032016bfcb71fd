"""The budget of one template render: operations, time, integer and text sizes.

A template is code written by a workspace user. Without limits one template can hold the
process (and on SQLite the database) for minutes: nested loops, an integer squared in a loop,
a text doubled with `~`, a format width of 300,000,000. Every render therefore runs against a
`Budget`, spent by the sandbox's hooks (`domain/templates.py`): each loop iteration, call,
operator, attribute and item lookup, filter and test costs at least one operation, and work on
large values costs in proportion to their size. Sizes are checked *before* a value is built,
so a bomb is refused before it takes the memory. Whatever runs out, the render ends with a
`BudgetExceeded` (a `TemplateError`) naming the limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn

from jinja2.utils import Namespace

#: Operations one render may spend (an ordinary email template spends a few dozen).
MAX_OPERATIONS = 20_000
#: Seconds one render may take, checked as operations are spent (a second line of defence).
MAX_SECONDS = 0.5
#: The longest text (or the largest list, counted as the text it would print as) a template
#: may build: an email body beyond this is a template mistake.
MAX_RENDERED_CHARS = 200_000
#: The largest integer a template may compute: 2**MAX_INT_BITS (about 10**300).
MAX_INT_BITS = 1_000
#: How deep lists and dicts may nest (a list that contains itself is refused).
MAX_DEPTH = 10
#: Characters of a value touched per operation charged.
CHARS_PER_OPERATION = 1_000


class TemplateError(ValueError):
    """A template that cannot be used: the message names where and why."""


class BudgetExceeded(TemplateError):
    """A render ran out of one of its limits; the message names the limit."""


@dataclass(slots=True)
class Budget:
    """What one render may spend. `used` says how much it did (tests and benchmarks read it)."""

    operations: int = MAX_OPERATIONS
    seconds: float = MAX_SECONDS
    clock: Callable[[], float] = time.perf_counter
    used: int = 0
    _deadline: float = field(default=0.0, repr=False)
    _next_check: int = field(default=0, repr=False)

    def start(self) -> None:
        self._deadline = self.clock() + self.seconds
        self._next_check = 256

    def spend(self, operations: int = 1) -> None:
        self.used += operations
        if self.used > self.operations:
            raise BudgetExceeded(f"over the operation budget ({self.operations:,} operations per render)")
        if self.used >= self._next_check:
            self._next_check = self.used + 256
            # Give the process's other threads their turn now rather than at the interpreter's
            # next switch (5 ms): a long render in a web process must not hold up /healthz or a
            # sign-in. An ordinary email (~30 operations) never gets here.
            time.sleep(0)
            if self.clock() > self._deadline:
                raise BudgetExceeded(f"over the time budget ({self.seconds:g} s per render)")


_CURRENT: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


def current() -> Budget | None:
    return _CURRENT.get()


def activate(budget: Budget) -> Any:
    """Make `budget` the one the sandbox spends from; returns the token for `deactivate`."""
    budget.start()
    return _CURRENT.set(budget)


def deactivate(token: Any) -> None:
    _CURRENT.reset(token)


def spend(operations: int = 1) -> None:
    budget = _CURRENT.get()
    if budget is not None:
        budget.spend(operations)


def refuse_size(what: str) -> NoReturn:
    raise BudgetExceeded(
        f"{what} too large: more than {MAX_RENDERED_CHARS:,} characters (the size limit of a template)"
    )


def weight(value: Any, depth: int = 0) -> int:
    """About how many characters `value` prints as, counted without printing it, and stopping
    early once past the size limit. Lists nested deeper than MAX_DEPTH are refused."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return 8
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, Namespace):
        value = object.__getattribute__(value, "_Namespace__attrs")
    if isinstance(value, list | tuple | set | frozenset | dict):
        if depth >= MAX_DEPTH:
            raise BudgetExceeded(f"lists or dicts nested more than {MAX_DEPTH} deep (the nesting limit)")
        total = 2
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            total += weight(item, depth + 1) + 2
            if total > MAX_RENDERED_CHARS:
                break
        return total
    return 16


def charge(value: Any, what: str) -> int:
    """Spend for touching `value`, refuse it if it is over the size limit; its weight."""
    size = weight(value)
    if size > MAX_RENDERED_CHARS:
        refuse_size(what)
    spend(1 + size // CHARS_PER_OPERATION)
    return size


def check_size(size: int, what: str) -> None:
    if size > MAX_RENDERED_CHARS:
        refuse_size(what)
    spend(1 + size // CHARS_PER_OPERATION)


def check_int(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise_int()


def raise_int() -> NoReturn:
    raise BudgetExceeded(f"an integer too large: beyond 2**{MAX_INT_BITS} (the integer limit)")
