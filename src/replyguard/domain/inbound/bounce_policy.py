"""Hard or soft, decided from the bounce reason by one written table.

Reasons are sisimai's taxonomy (https://libsisimai.org/en/reason/). sisimai calls a bounce hard
only for userunknown, hostunknown, hasmoved and notaccept; we follow it, with the exceptions
listed in `POLICIES`, each a deliberate disagreement that `make eval-bounces` prints as such.

Rules that hold whatever the table says (`verdict`):
- A temporary failure (a 4.x.x status, `Action: delayed`, a 4xx reply) never suppresses.
- A problem of the SENDER (our IP, our domain's SPF/DKIM/DMARC, our PTR, relaying, our
  reputation, a rate limit) says nothing about the recipient's address: never hard, and it
  never counts toward "repeated soft bounces become hard" (`escalates` is False).
- An unknown reason (undefined, onhold) is soft; only its repetition can make it hard.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Side(enum.StrEnum):
    """Whose problem the reason describes."""

    ADDRESS = "address"  # the recipient's address itself: gone, unknown, moved
    MAILBOX = "mailbox"  # the recipient's mailbox is there but cannot take mail now
    SENDER = "sender"  # our IP, domain, authentication, reputation, rate
    CONTENT = "content"  # this message: spam, virus, size, format, policy
    TRANSIENT = "transient"  # the path: timeouts, DNS, full disks, queue expiry
    UNKNOWN = "unknown"  # not decided


@dataclass(frozen=True, slots=True)
class Reason:
    name: str
    side: Side
    sisimai_hard: bool
    hard: bool  # our verdict for a permanent failure with this reason
    escalates: bool  # repeated soft bounces of this reason may become hard


def _r(
    name: str, side: Side, sisimai_hard: bool = False, hard: bool | None = None, escalates: bool = False
) -> Reason:
    return Reason(name, side, sisimai_hard, sisimai_hard if hard is None else hard, escalates)


_S = Side
#: The one table. `hard` differs from `sisimai_hard` only where POLICIES says why.
REASONS: dict[str, Reason] = {
    r.name: r
    for r in (
        _r("userunknown", _S.ADDRESS, True),
        _r("hostunknown", _S.ADDRESS, True),
        _r("hasmoved", _S.ADDRESS, True),
        _r("notaccept", _S.ADDRESS, True),
        _r("suspend", _S.ADDRESS, hard=True),
        _r("mailboxfull", _S.MAILBOX, escalates=True),
        _r("exceedlimit", _S.MAILBOX),
        _r("filtered", _S.MAILBOX, escalates=True),
        _r("mesgtoobig", _S.CONTENT),
        _r("contenterror", _S.CONTENT),
        _r("spamdetected", _S.CONTENT),
        _r("virusdetected", _S.CONTENT),
        _r("policyviolation", _S.CONTENT),
        _r("notcompliantrfc", _S.CONTENT),
        _r("blocked", _S.SENDER),
        _r("badreputation", _S.SENDER),
        _r("requireptr", _S.SENDER),
        _r("authfailure", _S.SENDER),
        _r("norelaying", _S.SENDER),
        _r("rejected", _S.SENDER),
        _r("securityerror", _S.SENDER),
        _r("failedstarttls", _S.SENDER),
        _r("syntaxerror", _S.SENDER),
        _r("speeding", _S.SENDER),
        _r("toomanyconn", _S.SENDER),
        _r("suppressed", _S.SENDER),
        _r("expired", _S.TRANSIENT),
        _r("networkerror", _S.TRANSIENT),
        _r("systemerror", _S.TRANSIENT),
        _r("systemfull", _S.TRANSIENT),
        _r("mailererror", _S.TRANSIENT),
        _r("onhold", _S.UNKNOWN, escalates=True),
        _r("undefined", _S.UNKNOWN, escalates=True),
    )
}


#: The reasons whose repeated soft bounces may add up to a hard bounce.
ESCALATING_REASONS: frozenset[str] = frozenset(name for name, r in REASONS.items() if r.escalates)


@dataclass(frozen=True, slots=True)
class Policy:
    """A deliberate disagreement with sisimai's hard/soft verdict."""

    name: str
    verdict: str  # "hard" or "soft": ours
    why: str


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy(
            "disabled-account",
            "hard",
            "a suspended, disabled or deactivated account (5.x.x, not 'temporarily') is hard: "
            "for outbound prospecting it means the person left, and mail to it hurts reputation; "
            "sisimai calls it soft because a provider may reactivate it",
        ),
        Policy(
            "missing-user-wording",
            "hard",
            "'user unknown' / 'no such user' with no SMTP stage and no status naming another reason "
            "is a missing user: we take the words at face value; sisimai calls it 'filtered' (soft) "
            "because Japanese carriers answered so after DATA for mail their users' filters refused "
            "(those carriers have their own rules here: bounce_hosts.py)",
        ),
        Policy(
            "sender-stage",
            "soft",
            "a refusal at MAIL FROM is about our sender, never an unknown recipient or host, whatever "
            "its words ('your envelope sender domain must exist'); sisimai may read such words as "
            "hostunknown (hard)",
        ),
        Policy(
            "temporary-status",
            "soft",
            "a 4.x.x status, a 4xx reply or Action: delayed never suppresses, whatever the wording",
        ),
    )
}


def is_temporary(status: str | None, action: str | None) -> bool:
    """A failure the MTA will retry or that says 'try again': never proof about the address."""
    return (action or "").lower().startswith("delay") or (status or "").startswith("4.")


def verdict(reason: str, status: str | None, action: str | None) -> bool:
    """True (hard) when the address itself is unusable; see the module docstring."""
    if is_temporary(status, action):
        return False
    entry = REASONS.get(reason)
    return bool(entry and entry.hard)


def escalates(reason: str | None) -> bool:
    """Whether repeated soft bounces with this reason may add up to a hard bounce."""
    entry = REASONS.get(reason or "undefined")
    return bool(entry and entry.escalates)


def reason_group(reason: str | None) -> str:
    """The side a reason belongs to ('-' for none): the rows of the eval's group table."""
    entry = REASONS.get(reason or "")
    return entry.side.value if entry else (reason or "-")


def policy_for(reason: str | None, status: str | None, evidence: Iterable[str] = ()) -> Policy | None:
    """The policy that makes our verdict differ from sisimai's for this bounce, if any."""
    entry = REASONS.get(reason or "")
    if entry is None:
        return None
    evidence = tuple(evidence)
    if is_temporary(status, None) or "bounce:temporary" in evidence or "bounce:delayed" in evidence:
        return POLICIES["temporary-status"]
    if reason == "userunknown" and "bounce:wording-only" in evidence:
        return POLICIES["missing-user-wording"]
    if "bounce:command:MAIL" in evidence and not entry.hard:
        return POLICIES["sender-stage"]
    if entry.hard != entry.sisimai_hard and entry.hard:
        return POLICIES["disabled-account"]
    return None
