"""Subject normalisation: strip stacked reply/forward prefixes in the languages we meet.

Contract: `normalize_subject` removes any stack of localised Re/Fwd prefixes ("RE: AW: R:",
"Re[2]:", "Re^2:", "[list]" tags in front), collapses whitespace and keeps the case of the
rest, so two subjects of one thread compare equal with `subject_key`.
"""

from __future__ import annotations

import re

# Reply and forward abbreviations (Wikipedia's list plus the widely copied StackOverflow set).
_PREFIX_WORDS = (
    r"re|res|aw|sv|vs|vb|vl|antw|antwort|wg|fw|fwd|tr|ref|réf|rif|r|i|odp|pd|rv|enc|ynt|ilt|"
    r"fs|trs|doorst|απ|σχετ|πρθ|תגובה|הועבר|回复|回覆|转发|轉寄|答复|返信|転送|odpowiedź|"
    r"vá|továbbítás|ant"
)
_PREFIX = re.compile(
    rf"^\s*(?:\[[^\]]{{1,40}}\]\s*)?(?:{_PREFIX_WORDS})\.?\s*(?:\[\d+\]|\^\d+|\(\d+\))?\s*[:：]\s*",
    re.IGNORECASE,
)
_LIST_TAG = re.compile(r"^\s*\[[^\]]{1,40}\]\s*")


def normalize_subject(subject: str) -> str:
    """The subject without stacked reply/forward prefixes, whitespace collapsed."""
    text = " ".join(subject.split())
    for _ in range(20):  # bounded: a hostile subject cannot loop us
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return text.strip()


def subject_key(subject: str) -> str:
    """A comparison key: normalised, list tags dropped, case-folded."""
    text = normalize_subject(subject)
    text = _LIST_TAG.sub("", text)
    return normalize_subject(text).casefold()


def has_reply_prefix(subject: str) -> bool:
    """True when the subject starts with a reply or forward prefix in any supported language."""
    return bool(_PREFIX.match(subject))
