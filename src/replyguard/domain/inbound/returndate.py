"""Out-of-office return dates: the first day the person is back.

Contract: `find_return_date(...)` returns (date, rule) or (None, None). Structured data wins
(iCloud's `X-Apple-Criteria ... endDate`); then keyword-anchored spans in each supported
language (anchors.py), each parsed in that ONE language with the message Date as the
relative base. "back on X" means X; "until X inclusive" / "through X" means the day after X;
a plain "until X" is ambiguous and gives X (pausing one day too long is harmless, resuming
too early is not, and X is also what "not back until X" means). Numeric dates are read by
hand so D/M versus M/D can be chosen by plausibility against the Date. A date before the
message or more than a year after it is rejected. dateparser is imported lazily and only
runs on anchored spans of out-of-office messages, never on ordinary replies.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from replyguard.domain.inbound.anchors import ANCHORS, INCLUSIVE_AFTER, RANGE, Anchor, at_boundary
from replyguard.domain.inbound.fastdate import LEAD, WORTH_DATEPARSER, read_date, with_rollover
from replyguard.domain.inbound.phrases import compile_lower

_APPLE_END = re.compile(r"endDate=(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})Z?", re.I)
_LEAD = r"^\s*(?:the|le|el|den|dem|il|o|dia|am|op|på|le|lundi|[^\W\d_]{2,12}[,.]?)?\s*"
# "26.07.", "7/26", "2. 8. 2024" (Czech and Slovak put a space after each dot), "2024-08-12".
_NUMERIC = re.compile(_LEAD + r"(\d{1,4})([./-])\s?(\d{1,2})(?:\2\s?(\d{2,4}))?\b(?!\s*(?:%|h\b|:\d))")
# Japanese and Chinese: "8月5日まで" (until), "8月6日以降" (from), "将于8月5日返回" (back on).
_JA = re.compile(
    r"(\d{1,2})月(\d{1,2})[日号][^。，,\n]{0,8}?(まで|以降|から|より|返回|回来|回到|上班|之前|前)"
    r"([^。\n]{0,8})"
)
# "から"/"より" (from) start the absence ("7月16日から8月12日まで") unless work resumes right after.
_JA_RESUME = re.compile(r"出社|出勤|戻|復帰|対応|返信|連絡|業務")
# A date BEFORE its anchor: Finnish "2.8.2024 asti", Turkish "5 Ağustos tarihine kadar".
_POSTFIX = compile_lower(
    r"(?<![\d.])(\d{1,2}(?:[./]\s?\d{1,2}(?:[./]\s?\d{2,4})?\.?|\.?\s+[^\W\d_]{3,12}))"
    r"(?:['’][^\W\d_]{1,4})?\s+(?:tarihine kadar|kadar|asti|saakka|tarihinde dönece)"
    # Hungarian "augusztus 5-ig" (until): month first, the suffix hangs on the day.
    r"|((?:január|február|március|április|május|június|július|augusztus|szeptember|október|"
    r"november|december)\s+\d{1,2})\.?-(?:ig|éig|áig|jéig)\b",
)
_BACK_WORDS = frozenset({"以降", "から", "より", "返回", "回来", "回到", "上班"})
_MAX_AHEAD = timedelta(days=400)
_SPAN_CHARS = 60


def _plausible(day: date, sent: date) -> bool:
    return sent - timedelta(days=1) <= day <= sent + _MAX_AHEAD


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
    return min(found, key=lambda d: d - sent) if found else None


_DATEPARSER_LANG = {"da": "da", "no": "nb"}


def _with_dateparser(span: str, lang: str, base: datetime) -> date | None:
    from dateparser.search import search_dates

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


def _candidates(text: str, sent: datetime, hint: str | None) -> list[tuple[int, int, int, date, str]]:
    found: list[tuple[int, int, int, date, str]] = []
    for anchor in ANCHORS:
        for match in anchor.pattern.finditer(text):
            if anchor.boundary and not at_boundary(text, match.start()):
                continue
            day = parse_span(text[match.end() :], anchor.lang, sent)
            if day is None:
                continue
            kind = anchor.kind
            if kind == "until" and INCLUSIVE_AFTER.match(text[match.end() :][:_SPAN_CHARS]):
                kind = "until_incl"
            found.append(_ranked(kind, anchor, match.start(), day, hint))
    for match in _JA.finditer(text):
        day = with_rollover(int(match.group(1)), int(match.group(2)), None, sent.date())
        if match.group(3) in {"から", "より"} and not _JA_RESUME.search(match.group(4)):
            continue
        if day and _plausible(day, sent.date()):
            kind = "back" if match.group(3) in _BACK_WORDS else "until"
            found.append(_ranked(kind, Anchor("ja", kind, _JA), match.start(), day, hint))
    for match in _POSTFIX.finditer(text):
        day = parse_span(match.group(1) or match.group(2), hint or "en", sent)
        if day:
            found.append(_ranked("until", Anchor(hint or "fi", "until", _POSTFIX), match.start(), day, hint))
    for match in RANGE.finditer(text):
        day = parse_span(match.group("month") + " " + match.group("end"), hint or "en", sent)
        if day:
            found.append(_ranked("until", Anchor("en", "until", RANGE), match.start(), day, hint))
    return found


_KIND_RANK = {"back": 0, "until_incl": 1, "until": 2, "out": 3}


def _ranked(
    kind: str, anchor: Anchor, pos: int, day: date, hint: str | None
) -> tuple[int, int, int, date, str]:
    result = day + timedelta(days=1) if kind == "until_incl" else day
    return (_KIND_RANK[kind], 0 if anchor.lang == hint else 1, pos, result, f"{anchor.lang}:{kind}")


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
    best = sorted(_candidates(f"{text}\n{subject}".lower(), sent, hint))
    if not best:
        return None, None
    return best[0][3], f"returndate:{best[0][4]}"
