"""Read models for the web pages, the REST API and the CLI: plain frozen dataclasses.

Every function takes a unit of work and filters on its `workspace_id`; an id of another
workspace is `NotFound`, exactly like an id that does not exist. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_PER_PAGE = 200
MAX_PAGE = 100_000  # deeper than anyone reads; keeps OFFSET a number every database takes


class NotFound(LookupError):
    """No such object in this workspace (whether it exists elsewhere is never said)."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    page: int
    per_page: int
    has_next: bool


def bounds(page: int, per_page: int) -> tuple[int, int]:
    """(offset, limit + 1) for a 1-based page: one row more tells whether a next page exists."""
    page = min(max(1, page), MAX_PAGE)
    per_page = min(max(1, per_page), MAX_PER_PAGE)
    return (page - 1) * per_page, per_page + 1


def paged(rows: list[T], page: int, per_page: int) -> Page[T]:
    per_page = min(max(1, per_page), MAX_PER_PAGE)
    return Page(rows[:per_page], min(max(1, page), MAX_PAGE), per_page, len(rows) > per_page)


def like_pattern(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, its own % and _ taken literally (escape \\)."""
    escaped = text.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
