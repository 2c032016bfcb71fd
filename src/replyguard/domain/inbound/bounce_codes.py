"""Enhanced status codes (RFC 3463) and SMTP reply codes (RFC 5321) read out of bounce prose.

Contract: `find_status(text, hint)` returns the status code a diagnostic means, or None;
`find_reply(text, hint)` the SMTP reply code; `prefer(dsn, found, reply)` chooses between the
status of a DSN's `Status:` field and the one written in its diagnostic; `status_name(status)`
is what a status code means on its own ('' when it names nothing). None of them raises.

The rules follow how sisimai (https://libsisimai.org, BSD-2-Clause) reads codes, because its
reasons are our reference: an IPv4 address is never a status ("[198.5.1.1]"), a code after a
digit, a dot or a "v" (a version) is not one either; a generic x.0.0 or the ambiguous 4.4.7
only counts when nothing more specific is written; a reply code is taken by severity, the
permanent ones first, whatever their position.
"""

from __future__ import annotations

import re

# x.y.z with the subject 0-7 and a detail of one to three digits, not followed by ".digit" (the
# first three numbers of an IPv4 address such as 5.1.1.9); what may precede it is checked below.
_STATUS = re.compile(r"([245])\.([0-7])\.(\d{1,3})(?!\d|\.\d)")
_NOT_BEFORE = frozenset("./0123456789vV")
_REPLIES = {
    "5": ("550", "552", "553", "551", "521", "525", "523", "524", "530", "533", "534", "535",
          "538", "555", "556", "554", "500", "501", "502", "503", "504"),
    "4": ("421", "450", "451", "452", "422", "430", "432", "453", "454", "455", "458", "459"),
    "2": ("211", "214", "220", "221", "235", "250", "251", "252", "253", "334", "354"),
}  # fmt: skip
_ALL_REPLIES = _REPLIES["5"] + _REPLIES["4"] + _REPLIES["2"]
# Three digits with no digit, dot or slash on either side (not part of a status, an IP or a date).
_REPLY_CODE = re.compile(r"(?<![\d./])([2-5]\d\d)(?![\d./])")

# The meaning of an enhanced status code alone (RFC 3463 and the IANA registry).
_NAMES = {
    "2.1.5": "delivered",
    "4.1.6": "hasmoved", "4.1.7": "rejected", "4.1.8": "rejected", "4.1.9": "systemerror",
    "4.2.1": "blocked", "4.2.2": "mailboxfull", "4.2.3": "exceedlimit", "4.2.4": "filtered",
    "4.3.1": "systemfull", "4.3.2": "notaccept", "4.3.3": "systemerror", "4.3.5": "systemerror",
    "4.4.1": "expired", "4.4.2": "networkerror", "4.4.3": "systemerror", "4.4.4": "networkerror",
    "4.4.5": "systemfull", "4.4.6": "networkerror", "4.4.7": "expired", "4.4.8": "networkerror",
    "4.5.3": "systemerror", "4.5.5": "systemerror", "4.6.0": "contenterror", "4.6.2": "contenterror",
    "4.6.5": "contenterror", "4.7.1": "blocked", "4.7.2": "blocked", "4.7.5": "securityerror",
    "4.7.6": "securityerror", "4.7.7": "securityerror", "4.7.12": "securityerror",
    "4.7.15": "securityerror", "4.7.16": "mesgtoobig", "4.7.24": "authfailure",
    "4.7.25": "requireptr", "4.7.26": "authfailure",
    "5.1.0": "userunknown", "5.1.1": "userunknown", "5.1.2": "hostunknown", "5.1.3": "userunknown",
    "5.1.4": "filtered", "5.1.6": "hasmoved", "5.1.7": "rejected", "5.1.8": "rejected",
    "5.1.9": "systemerror", "5.1.10": "notaccept", "5.2.0": "filtered", "5.2.1": "filtered",
    "5.2.2": "mailboxfull", "5.2.3": "exceedlimit", "5.2.4": "filtered", "5.3.0": "systemerror",
    "5.3.1": "systemfull", "5.3.2": "notaccept", "5.3.3": "systemerror", "5.3.4": "mesgtoobig",
    "5.3.5": "systemerror", "5.4.0": "networkerror", "5.4.3": "systemerror", "5.4.4": "hostunknown",
    "5.5.2": "syntaxerror", "5.5.3": "toomanyconn", "5.5.4": "systemerror", "5.5.5": "systemerror",
    "5.5.6": "syntaxerror", "5.6.0": "contenterror", "5.6.1": "contenterror", "5.6.2": "contenterror",
    "5.6.3": "contenterror", "5.6.5": "contenterror", "5.6.6": "contenterror", "5.6.7": "contenterror",
    "5.6.8": "contenterror", "5.6.9": "contenterror", "5.7.13": "suspend", "5.7.16": "mesgtoobig",
    "5.7.17": "hasmoved", "5.7.18": "hasmoved", "5.7.20": "authfailure", "5.7.21": "authfailure",
    "5.7.22": "authfailure", "5.7.23": "authfailure", "5.7.24": "authfailure", "5.7.25": "requireptr",
    "5.7.26": "authfailure", "5.7.27": "notaccept", "5.7.28": "spamdetected", "5.7.29": "authfailure",
    "5.7.30": "failedstarttls",
}  # fmt: skip
# 5.7.0 to 5.7.19 not named above: security or policy status without a better name.
_SECURITY = frozenset(f"5.7.{n}" for n in range(20)) - frozenset(_NAMES)


def status_name(status: str | None) -> str:
    """What an enhanced status code means on its own ('' when it names nothing)."""
    if not status or len(status) < 5:
        return ""
    if status.startswith("2."):
        return "delivered"
    if status in _NAMES:
        return _NAMES[status]
    return "securityerror" if status in _SECURITY else ""


def _candidates(text: str, hint: str) -> list[str]:
    """Every status code written in `text`, in order, the generic ones moved to the end."""
    scrubbed = f" {text}   "
    classes = hint[:1] if hint[:1] in ("2", "4", "5") else "542"
    found: list[tuple[int, str]] = []
    generic: list[str] = []
    for match in _STATUS.finditer(scrubbed):
        if match.group(1) not in classes or scrubbed[match.start() - 1] in _NOT_BEFORE:
            continue
        code = match.group(0)
        if code.endswith(".0.0") or code == "4.4.7":
            generic.append(code)  # only when nothing more specific is written (the last one)
        else:
            found.append((match.start(), code))
    return [code for _, code in found] + generic[-1:]


def find_status(text: str, hint: str = "") -> str | None:
    """The status code that `text` means; `hint` is a reply code or its first digit."""
    if len(text) < 5:
        return None
    codes = _candidates(text, hint)
    if not codes:
        return None
    chosen = codes[0]
    for code in codes[1:]:
        chosen = prefer(chosen, code, "") or chosen
    return chosen


def find_reply(text: str, hint: str = "") -> str | None:
    """The SMTP reply code written in `text`: by severity, not by position; `hint` is a status
    code or its first digit (a 4.x.x status looks for a 4xx reply first)."""
    if len(text) < 3 or "x-unix" in text.lower():
        return None
    written = set(_REPLY_CODE.findall(text))
    if not written:
        return None
    return next((code for code in _REPLIES.get(hint[:1], _ALL_REPLIES) if code in written), None)


def prefer(dsn: str | None, found: str | None, reply: str | None) -> str | None:
    """The status to keep: the DSN's own, or the one written in its diagnostic when it says
    more (the DSN's is generic, or is a code known to be used loosely)."""
    if not dsn:
        return found
    if not found or dsn == found:
        return dsn
    if len(dsn) < 5:
        return found
    if len(found) < 5:
        return dsn
    first = (reply or "0")[:1]
    if first != "0" and dsn[0] != found[0]:
        if first == dsn[0]:
            return dsn
        if first == found[0]:
            return found
    return _prefer_specific(dsn, found)


def _prefer_specific(dsn: str, found: str) -> str:
    if ".0.0" in dsn:
        return found if ".0.0" not in found else dsn
    if ".0" in dsn and ".0" not in found:
        return found  # the DSN's is x.y.0 or x.0.z: the diagnostic is more precise
    if ".0.0" in found:
        return dsn
    if dsn in ("4.4.7", "4.7.0") or dsn.startswith("5.3.") or dsn[1:4] in (".5.1", ".5.2", ".5.4", ".5.5"):
        return found  # expired, "too many errors", system errors and protocol codes say little
    if dsn == "5.1.1":
        return dsn if ".0" in found or found.startswith("5.5.") else found
    if dsn == "5.1.3" and found.startswith("5.7."):
        return found
    return dsn
