"""Out-of-office return dates: the first day the person is back.

Contract: `find_return_date(...)` returns (date, rule) or (None, None). Structured data wins
(iCloud's `X-Apple-Criteria ... endDate`); then keyword-anchored spans in each supported
language (anchors.py), each parsed in that ONE language with the message Date as the
relative base; then dates and weekdays whose keyword follows them (suffixdates.py: Japanese,
Chinese, Finnish, Hungarian, Turkish) and ranges (dateranges.py). "back on X" means X; "until
X inclusive" / "through X" and the end of a range ("23.12.–06.01.", "from July 15 to July 26",
"vom 15. bis 26. Juli") are the last day away and give the day after; a plain "until X" is
ambiguous and gives X (X is also what "not back until X" means). A weekday means the next such
day after the message ("from Monday", "od poniedziałku", "bis Freitag"); "Monday to Friday"
is opening hours and gives nothing. Numeric dates are read by hand so D/M versus M/D can be
chosen by plausibility against the Date. A date more than three years after the message is
rejected (a sabbatical or a parental leave is not: the reply policy holds the lead for a person
when the absence is longer than the pause limit), and so is one more than PAST before it; a
date up to PAST before the message is kept, so that an absence already over pauses nothing.
Only the first 8,000 characters of the text are read. dateparser is imported
lazily and only runs on anchored spans of out-of-office messages, never on ordinary replies.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from replyguard.domain.inbound.anchors import ANCHORS, INCLUSIVE_AFTER, Anchor, at_boundary
from replyguard.domain.inbound.dateranges import after_weekday, range_ends, starts_range
from replyguard.domain.inbound.fastdate import LEAD, WORTH_DATEPARSER, read_date, with_rollover
from replyguard.domain.inbound.phrases import compile_lower, fold_case
from replyguard.domain.inbound.suffixdates import suffix_candidates

_APPLE_END = re.compile(r"endDate=(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})Z?", re.I)
_LEAD = r"^\s*(?:the|le|el|den|dem|il|o|dia|am|op|på|le|lundi|[^\W\d_]{2,12}[,.]?)?\s*"
# "26.07.", "7/26", "2. 8. 2024" (Czech and Slovak put a space after each dot), "2024-08-12".
_NUMERIC = re.compile(_LEAD + r"(\d{1,4})([./-])\s?(\d{1,2})(?:\2\s?(\d{2,4}))?\b(?!\s*(?:%|h\b|:\d))")
# A date BEFORE its anchor: Finnish "2.8.2024 asti", Turkish "5 Ağustos tarihine kadar".
_POSTFIX = compile_lower(
    r"(?<![\d.])(\d{1,2}(?:[./]\s?\d{1,2}(?:[./]\s?\d{2,4})?\.?|\.?\s+[^\W\d_]{3,12}))"
    r"(?:['’][^\W\d_]{1,4})?\s+(?:tarihine kadar|kadar|asti|saakka|tarihinde dönece)"
    # Hungarian "augusztus 5-ig" (until): month first, the suffix hangs on the day.
    r"|((?:január|február|március|április|május|június|július|augusztus|szeptember|október|"
    r"november|december)\s+\d{1,2})\.?-(?:ig|éig|áig|jéig)\b"
    # Turkish back: "5 Ağustos Pazartesi günü ofiste olacağım", "5 Ağustos'tan itibaren ofisteyim".
    r"|(?<![\d.])(\d{1,2}\.?\s+[^\W\d_]{3,12}(?:\s+\d{4})?)(?:['’][^\W\d_]{1,4})?(?:\s+[^\W\d_]{4,9})?\s+"
    r"(?:günü\s+|tarihinde\s+|itibar[ıi]yla\s+|itibaren\s+)?(?:ofiste|işbaşı|görevimin başında|dönüyor)",
)
_MAX_AHEAD = timedelta(days=3 * 366)
PAST = timedelta(days=90)
_SPAN_CHARS = 60
# The return date sits in an out-of-office notice's first lines; reading only the start bounds
# the cost on a hostile 64,000-character body of anchor words (about 0.4 s when read whole).
_MAX_TEXT_CHARS = 8_000


def _plausible(day: date, sent: date) -> bool:
    return sent - PAST <= day <= sent + _MAX_AHEAD


def _nearest(found: list[date], sent: date) -> date:
    """The reading to believe: the nearest on or after the message Date, else the nearest before."""
    return min(found, key=lambda d: (d < sent - timedelta(days=1), abs(d - sent)))


def _numeric(span: str, lang: str, sent: date) -> date | None:
    match = _NUMERIC.match(span)
    if not match:
        return None
    first, sep, second, year_text = match.group(1), match.group(2), match.group(3), match.group(4)
    if len(first) == 4:  # ISO 2024-07-26
        iso = re.match(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})", span[match.start(1) :])
        return with_rollover(int(iso.group(2)), int(iso.group(3)), int(iso.group(1)), sent) if iso else None
    year = None
    if year_text:
        year = int(year_text) + (2000 if len(year_text) == 2 else 0)
    a, b = int(first), int(second)
    # Dots are day-first everywhere; slashes and dashes are ambiguous: try both orders and
    # keep the plausible one nearest after the message Date (the locale order breaks ties).
    orders = [(b, a)] if sep == "." else ([(a, b), (b, a)] if lang == "en" else [(b, a), (a, b)])
    found = [d for m, dd in orders if (d := with_rollover(m, dd, year, sent)) is not None]
    found = [d for d in found if _plausible(d, sent)]
    return _nearest(found, sent) if found else None


_DATEPARSER_LANG = {"da": "da", "no": "nb"}


def _with_dateparser(span: str, lang: str, base: datetime) -> date | None:
    from dateparser.search import search_dates  # noqa: PLC0415 (dateparser takes 0.3 s to import: only a return date needs it)

    settings: dict[str, Any] = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "future",
        "RETURN_AS_TIMEZONE_AWARE": False,
        "DATE_ORDER": "MDY" if lang == "en" else "DMY",
    }
    try:
        found = search_dates(span, languages=[_DATEPARSER_LANG.get(lang, lang)], settings=settings)
    except Exception:  # dateparser has raised on odd input before; a date is optional
        return None
    if not found:
        return None
    text, when = found[0]
    if span.find(text) > 15 or len(text.strip()) < 3:
        return None  # a match far from the anchor is some other date (or a false positive)
    return when.date() if isinstance(when, datetime) else None


def parse_span(span: str, lang: str, sent: datetime) -> date | None:
    """The date written at the start of `span`, read in language `lang`."""
    span = span[:_SPAN_CHARS].split("\n", 1)[0]
    lead = LEAD.match(span)
    bare = span[lead.end() :] if lead and lead.end() else span
    day = _numeric(span, lang, sent.date()) or read_date(span, sent.date())
    if day is None and bare is not span:
        day = _numeric(bare, lang, sent.date())
    if day is None and WORTH_DATEPARSER.match(span):
        day = _with_dateparser(span, lang, sent.replace(tzinfo=None))
    if day is not None and _plausible(day, sent.date()):
        return day
    return None


def _apple_end(criteria: str, sent: datetime | None) -> date | None:
    match = _APPLE_END.search(criteria)
    if not match:
        return None
    end = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}:{match.group(3)}:"
                                 f"{match.group(4)}+00:00") + timedelta(seconds=1)  # fmt: skip
    local = end.astimezone(sent.tzinfo) if sent and sent.tzinfo else end.astimezone(UTC)
    # An all-day end in a zone east of the sender lands after noon: the person is back next day.
    return local.date() + timedelta(days=1) if local.hour >= 12 else local.date()


def _anchored_kind(anchor: Anchor, text: str, start: int, end: int) -> str | None:
    """What the date after this anchor match means, or None when it introduces no date."""
    kind = anchor.kind
    if kind in {"back", "out"}:
        return kind
    if after_weekday(text, start):
        return None  # "Monday to Friday", "Montag bis Freitag": opening hours, not an absence
    if kind == "range" and not anchor.needs_start:
        return kind  # the anchor itself holds the range's start ("du 15 au ")
    if starts_range(text, start):
        return "range"  # "vom 15. bis 26. Juli": the 26th is the last day away
    if anchor.needs_start:
        return None
    if kind == "until" and INCLUSIVE_AFTER.match(text[end : end + _SPAN_CHARS]):
        return "until_incl"
    return kind


def _candidates(text: str, sent: datetime, hint: str | None) -> list[tuple[int, int, int, date, str]]:
    found: list[tuple[int, int, int, date, str]] = []
    for anchor in ANCHORS:
        for match in anchor.pattern.finditer(text):
            if anchor.boundary and not at_boundary(text, match.start()):
                continue
            kind = _anchored_kind(anchor, text, match.start(), match.end())
            day = parse_span(text[match.end() :], anchor.lang, sent) if kind else None
            if kind and day:
                found.append(_ranked(kind, anchor.lang, match.start(), day, hint))
    for kind, lang, pos, day in suffix_candidates(text, sent.date()):
        if _plausible(day, sent.date()):
            found.append(_ranked(kind, lang, pos, day, hint))
    for match in _POSTFIX.finditer(text):
        day = parse_span(match.group(1) or match.group(2) or match.group(3), hint or "en", sent)
        if day:
            kind = "back" if match.group(3) else "until"
            found.append(_ranked(kind, hint or "fi", match.start(), day, hint))
    for pos, end in range_ends(text):
        day = parse_span(end, hint or "en", sent)
        if day:
            found.append(_ranked("range", hint or "en", pos, day, hint))
    return found


#: Explicit return words beat inclusive ends and ranges, which beat a plain "until".
_KIND_RANK = {"back": 0, "until_incl": 1, "range": 1, "until": 2, "out": 3}
_DAY_AFTER = frozenset({"until_incl", "range"})


def _ranked(kind: str, lang: str, pos: int, day: date, hint: str | None) -> tuple[int, int, int, date, str]:
    result = day + timedelta(days=1) if kind in _DAY_AFTER else day
    return (_KIND_RANK[kind], 0 if lang == hint else 1, pos, result, f"{lang}:{kind}")


def find_return_date(
    text: str, subject: str, sent: datetime | None, apple_criteria: str, hint: str | None
) -> tuple[date | None, str | None]:
    """The first day back, and the rule that found it; see the module docstring."""
    structured = _apple_end(apple_criteria, sent) if apple_criteria else None
    if structured is not None:
        return structured, "header:x-apple-criteria"
    if sent is None:
        return None, None  # relative words cannot be resolved without the message Date
    # Anchors are lower-case patterns; spans are cut from the same lower-cased text.
    best = sorted(_candidates(fold_case(f"{text[:_MAX_TEXT_CHARS]}\n{subject}"), sent, hint))
    if not best:
        return None, None
    return best[0][3], f"returndate:{best[0][4]}"
