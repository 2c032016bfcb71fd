"""Lead files (CSV) as validated rows.

A bad row is reported with its line number and skipped; good rows are kept. Columns follow
`examples/leads.csv`; any other column is kept as a custom field usable in templates. Exports
go out through `write_csv`, formula-safe for spreadsheets.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from replyguard.domain.addresses import (
    InvalidAddress,
    UnsafeHeaderValue,
    check_header_value,
    normalize_address,
)
from replyguard.domain.schedule import ScheduleError, load_zone

KNOWN_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "company",
    "title",
    "timezone",
    "alt_emails",
    "owner",
)
_SPLIT_ALTS = re.compile(r"[;,\s]+")
_CUSTOM_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


class LeadFileError(ValueError):
    """The file as a whole cannot be read (no header, no email column)."""


@dataclass(frozen=True, slots=True)
class LeadRow:
    line: int
    email: str
    first_name: str
    last_name: str
    company: str
    title: str
    timezone: str | None
    alt_emails: tuple[str, ...]
    owner: str | None
    custom: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RowError:
    line: int
    message: str


def read_leads(data: bytes) -> Iterator[LeadRow | RowError]:
    """Yield a LeadRow or a RowError per data row, in file order."""
    text = data.decode("utf-8-sig", errors="surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise LeadFileError("the file is empty: expected a header line starting with 'email'") from None
    if "email" not in header:
        raise LeadFileError(f"no 'email' column in the header line (found: {', '.join(header)})")
    customs = [h for h in header if h not in KNOWN_COLUMNS]
    bad = [h for h in customs if not _CUSTOM_NAME.match(h)]
    if bad:
        raise LeadFileError(f"column name(s) {bad} cannot be used in templates: use letters, digits and _")
    # Report the line a record starts on: a quoted field may span several lines.
    records: list[tuple[int, list[str]]] = []
    end = reader.line_num
    for record in reader:
        records.append((end + 1, record))
        end = reader.line_num
    if records:
        _refuse_unclosed_quote(text, records[-1][0], end)
    seen: dict[str, int] = {}
    for line, record in records:
        if any(cell.strip() for cell in record):
            yield _row(header, record, line, seen)


_LINES = re.compile(r"\r\n|\r|\n")  # what the csv module counts as a line end


def _refuse_unclosed_quote(text: str, first: int, last: int) -> None:
    """A quote opened and never closed swallows every line after it into one cell: the csv
    module reads that as one short row, and the rows after it would be lost without a word.
    Inside a quoted cell quotes come in pairs (`""`), so an odd count from the record's first
    line to the end of the file is a quote left open: the whole file is refused."""
    if last > first and "\n".join(_LINES.split(text)[first - 1 :]).count('"') % 2:
        raise LeadFileError(
            f"line {first}: a quote opened there is never closed, so lines {first}-{last} read as one "
            'cell; close the quote (or double a quote inside a value: "") and import again'
        )


def _row(header: list[str], record: list[str], line: int, seen: dict[str, int]) -> LeadRow | RowError:
    if len(record) != len(header):
        return RowError(line, f"expected {len(header)} columns, found {len(record)}")
    values = dict(zip(header, (cell.strip() for cell in record), strict=True))
    for name, value in values.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return RowError(line, f"column {name!r} is not valid UTF-8 text: save the file as UTF-8")
        try:
            check_header_value(name, value)
        except UnsafeHeaderValue as exc:
            return RowError(line, str(exc))
    try:
        email = normalize_address(values["email"])
        alts = tuple(
            a
            for a in (normalize_address(v) for v in _SPLIT_ALTS.split(values.get("alt_emails", "")) if v)
            if a != email
        )
        owner = normalize_address(values["owner"]) if values.get("owner") else None
    except InvalidAddress as exc:
        return RowError(line, str(exc))
    timezone = values.get("timezone") or None
    if timezone:
        try:
            load_zone(timezone)
        except ScheduleError as exc:
            return RowError(line, str(exc))
    if email in seen:
        return RowError(line, f"{email} appears again (first on line {seen[email]}); row skipped")
    seen[email] = line
    return LeadRow(
        line=line,
        email=email,
        first_name=values.get("first_name", ""),
        last_name=values.get("last_name", ""),
        company=values.get("company", ""),
        title=values.get("title", ""),
        timezone=timezone,
        alt_emails=tuple(dict.fromkeys(alts)),
        owner=owner,
        custom={k: values[k] for k in header if k not in KNOWN_COLUMNS},
    )


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...) from a
# lead's company name), and Excel also after leading spaces or a tab (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def safe_cell(value: str) -> str:
    """`value` as a spreadsheet shows it and never runs it: a cell that would start a formula
    gets a leading apostrophe (shown by no spreadsheet, kept by every CSV reader)."""
    return "'" + value if value.lstrip(" ").startswith(_FORMULA_START) else value


def write_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A CSV file (RFC 4180, CRLF) whose every cell went through `safe_cell`."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows([safe_cell(cell) for cell in row] for row in rows)
    return buffer.getvalue()
