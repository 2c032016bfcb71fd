# ruff: noqa: E501  (format signatures and phrase tables read best one per line, as servers write them)
"""Why a delivery failed, in sisimai's reason taxonomy, from the facts of one failed recipient.

Contract: `reason_for(facts)` returns `(reason, why)`: a reason name of `bounce_policy.REASONS`
(or "delivered"/"vacation") and what decided it (a phrase, a code, the reporting server), for
the evidence. It never raises.

The decision follows sisimai's (https://libsisimai.org, BSD-2-Clause), in this order:
1. the reason the reporting server's own format names (`Facts.hint`, read by bounce_mta/), unless
   it is one that needs a second look (userunknown, hostunknown, expired, systemerror, ...);
2. a local delivery agent's message (procmail, maildrop, Dovecot, ...);
3. a provider's documented error codes when the recipient's domain or the remote host is one
   we know (bounce_hosts.py);
4. the specific families, each with its own use of the status code and the SMTP command
   (`_ORDER` and `_PROBES`): "user unknown" is a missing user only when RCPT TO was refused or
   the status says so; the same words after DATA are a filter; with no stage at all we take
   the words at face value (policy "missing-user-wording", where sisimai says "filtered");
5. when the status code names nothing better, the generic wordings (`_GENERIC`), then the
   status code's own meaning, its class, the reply code and the SMTP command;
6. "onhold" when there was a diagnostic that named nothing, "undefined" when there was none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from replyguard.domain.inbound.bounce_codes import status_name
from replyguard.domain.inbound.bounce_hosts import reason_from_host
from replyguard.domain.inbound.bounce_wording import Words


@dataclass(frozen=True, slots=True)
class Facts:
    """What one failed recipient's report says, normalised by bounce_facts.py."""

    status: str | None = None  # an enhanced status code such as 5.1.1
    reply_code: str | None = None  # the SMTP reply code such as 550
    action: str | None = None  # failed | delayed | delivered | ...
    command: str | None = None  # CONN | HELO | MAIL | RCPT | DATA | AUTH | STARTTLS | None
    diagnostic: str = ""  # the diagnostic text, lower-cased, whitespace collapsed
    hint: str | None = None  # the reason the reporting server's own format names
    spec: str | None = None  # the diagnostic type: SMTP, X-UNIX, ... (None: unknown)
    rhost: str | None = None  # the remote host that refused, when named
    domain: str | None = None  # the recipient's domain


# Reasons a server's format or a status code may name that still deserve a second look.
_RETRY = frozenset({"", "undefined", "onhold", "systemerror", "securityerror", "expired",
                    "networkerror", "hostunknown", "userunknown"})  # fmt: skip
_BEFORE_DATA = frozenset({"CONN", "HELO", "MAIL", "RCPT"})
_ORDER = ("mailboxfull", "mesgtoobig", "exceedlimit", "suspend", "hasmoved", "norelaying", "authfailure",
          "userunknown", "filtered", "requireptr", "notcompliantrfc", "badreputation", "contenterror",
          "rejected", "hostunknown", "spamdetected", "speeding", "toomanyconn", "blocked")  # fmt: skip
_GENERIC = ("mailboxfull", "authfailure", "badreputation", "speeding", "spamdetected", "virusdetected",
            "policyviolation", "norelaying", "systemerror", "networkerror", "suspend", "contenterror",
            "systemfull", "notaccept", "expired", "failedstarttls", "securityerror", "suppressed",
            "mailererror")  # fmt: skip
# Local delivery agents: how each announces itself, then its messages by reason.
_LDA: tuple[tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    (("your message to <", "> was automatically rejected:"),  # Dovecot
     (("mailboxfull", ("not enough disk space", "quota exceeded")), ("userunknown", ("mailbox doesn't exist: ",)))),
    (("mail.local: ",),
     (("mailboxfull", ("disc quota exceeded", "mailbox full or quota exceeded")),
      ("systemerror", ("temporary file write error",)),
      ("userunknown", (": invalid mailbox path", ": unknown user:", ": user missing home directory", ": user unknown")))),
    (("procmail: ", "/procmail "),
     (("mailboxfull", ("quota exceeded while writing", "user over quota")), ("systemerror", ("service unavailable",)),
      ("systemfull", ("no space left to finish writing",)))),
    (("maildrop: ",),
     (("mailboxfull", ("maildir over quota.",)), ("userunknown", ("cannot find system user", "invalid user specified.")))),
    (("vdelivermail: ",),
     (("filtered", ("user does not exist, but will deliver to ",)), ("mailboxfull", ("domain is over quota", "user is over quota")),
      ("suspend", ("account is locked email bounced",)), ("userunknown", ("sorry, no mailbox here by that name.",)))),
    (("vdeliver: ",),
     (("mailboxfull", ("delivery failed due to system quota violation",)),
      ("userunknown", ("invalid or unknown base user or domain", "invalid or unknown virtual user",
                       "user name does not refer to a virtual user")))),
)  # fmt: skip


#: The prefix of `why` when a missing user was read from the words alone (see _userunknown).
WORDING_ONLY = "wording only: "


def _explicit(reason: str | None) -> bool:
    return bool(reason) and reason not in ("undefined", "onhold")


def _userunknown(f: Facts, named: str, w: Words) -> str | None:
    if named == "suspend" or f.command == "MAIL":
        return None
    if named == "userunknown":
        # A 5.1.1 with words of another family is that family's (a relay denial, a block, ...).
        clash = ("norelaying", "blocked", "mailboxfull", "hasmoved", "rejected", "notaccept")
        return None if any(w.says(r) for r in clash) else f.status
    if f.command == "RCPT":
        return w.says("userunknown")
    if f.command is None and f.hint is None and named in ("", "notaccept"):
        # Policy "missing-user-wording" (bounce_policy.py): with no SMTP stage and no status that
        # names another reason, "user unknown" is taken at its word. sisimai calls it "filtered".
        found = w.says("userunknown")
        return f"{WORDING_ONLY}{found}" if found else None
    return None


def _filtered(f: Facts, named: str, w: Words) -> str | None:
    if named == "suspend":
        return None
    if named != "filtered" and f.command in _BEFORE_DATA:
        return None  # refused before the message was read: not a filter of its content
    return w.says("filtered") or w.says("userunknown")


def _rejected(f: Facts, named: str, w: Words) -> str | None:
    if named == "rejected":
        return f.status
    if f.command == "MAIL" or (f.command == "DATA" and named != "userunknown"):
        return w.says("rejected")
    if not _explicit(named) or named in ("securityerror", "systemerror"):
        return w.says("rejected")
    return None


def _mesgtoobig(f: Facts, named: str, w: Words) -> str | None:
    if named == "mesgtoobig":
        return f.status
    if named == "exceedlimit" or f.status == "5.2.3":
        return None
    return w.says("mesgtoobig")


def _hostunknown(f: Facts, named: str, w: Words) -> str | None:
    if f.command == "MAIL":
        return None  # refused at MAIL FROM: about our sender's domain (policy "sender-stage")
    if named == "hostunknown":
        return None if w.says("networkerror") else f.status
    return w.says("hostunknown")


def _spamdetected(f: Facts, named: str, w: Words) -> str | None:
    if not f.status:
        return None
    if named == "spamdetected":
        return f.status
    return None if f.command in _BEFORE_DATA else w.says("spamdetected")


def _contenterror(f: Facts, named: str, w: Words) -> str | None:
    if _spamdetected(f, named, w):
        return None
    return f.status if named == "contenterror" else w.says("contenterror")


def _norelaying(f: Facts, named: str, w: Words) -> str | None:
    if f.hint in ("securityerror", "systemerror", "undefined") or f.command in ("CONN", "HELO"):
        return None
    return w.says("norelaying")


def _suspend(f: Facts, named: str, w: Words) -> str | None:
    return "reply 525" if f.reply_code == "525" else w.says("suspend")


_Probe = Callable[[Facts, str, Words], str | None]


def _by_status_or_words(reason: str) -> _Probe:
    def probe(f: Facts, named: str, w: Words) -> str | None:
        return f.status if named == reason else w.says(reason)

    return probe


def _by_words(reason: str) -> _Probe:
    return lambda f, named, w: w.says(reason)


_PROBES: dict[str, _Probe] = {
    "mailboxfull": _by_status_or_words("mailboxfull"),
    "mesgtoobig": _mesgtoobig,
    "exceedlimit": _by_status_or_words("exceedlimit"),
    "suspend": _suspend,
    "hasmoved": _by_words("hasmoved"),
    "norelaying": _norelaying,
    "authfailure": _by_status_or_words("authfailure"),
    "userunknown": _userunknown,
    "filtered": _filtered,
    "requireptr": _by_status_or_words("requireptr"),
    "notcompliantrfc": _by_words("notcompliantrfc"),
    "badreputation": _by_words("badreputation"),
    "contenterror": _contenterror,
    "rejected": _rejected,
    "hostunknown": _hostunknown,
    "spamdetected": _spamdetected,
    "speeding": _by_words("speeding"),
    "toomanyconn": _by_status_or_words("toomanyconn"),
    "blocked": _by_status_or_words("blocked"),
}


def _local_agent(f: Facts) -> str | None:
    """A local delivery agent's failure (only at DATA or with no SMTP stage)."""
    if not f.diagnostic or f.command not in (None, "DATA"):
        return None
    for marks, messages in _LDA:
        if any(mark in f.diagnostic for mark in marks):
            for reason, phrases in messages:
                if any(p in f.diagnostic for p in phrases):
                    return reason
            return "mailererror"
    return None


def _specific(f: Facts, named: str, w: Words) -> tuple[str, str] | None:
    """Step 4: the first family whose probe accepts the facts."""
    if f.spec not in (None, "SMTP"):
        return None
    for reason in _ORDER:
        if f.hint == reason:
            return reason, f"reported as {reason}"
        why = _PROBES[reason](f, named, w)
        if why:
            return reason, why
    return None


def _generic(f: Facts, named: str, w: Words) -> tuple[str, str] | None:
    """Step 5: generic wordings, then what the codes and the command say."""
    if _explicit(f.hint):
        return str(f.hint), f"reported as {f.hint}"
    if named not in _RETRY and f.spec in (None, "SMTP"):
        return (named, f.status or "") if named else None
    for reason in _GENERIC:
        why = w.says(reason)
        if why:
            return reason, why
    if named:
        return named, f.status or ""
    status, reply = f.status or "", f.reply_code or ""
    checks = (
        (status[:3] in ("5.6", "4.6"), "contenterror", status),
        (status[:3] in ("5.7", "4.7"), "securityerror", status),
        ((f.spec or "").startswith("X-UNIX"), "mailererror", f.spec or ""),
        (reply[1:2] == "0" and reply[:1] in ("4", "5") and "0" < reply[2:] < "8", "syntaxerror", reply),
        ((f.action or "") in ("delayed", "expired"), "expired", "action: delayed"),
        (f.command == "HELO", "blocked", "refused at HELO"),
        (reply in ("521", "556"), "notaccept", reply),
    )
    return next(((reason, why) for ok, reason, why in checks if ok), None)


def reason_for(f: Facts) -> tuple[str, str]:
    """(reason, why): see the module docstring for the order."""
    if f.hint and f.hint not in _RETRY:
        return f.hint, f"reported as {f.hint}"
    named = status_name(f.status)
    if named == "delivered":
        return "delivered", f.status or ""
    for step in (_local_agent, reason_from_host):
        found = step(f)
        if _explicit(found):
            return str(
                found
            ), f"{'local delivery agent' if step is _local_agent else 'provider code'}: {found}"
    w = Words(f.diagnostic)
    decided = _specific(f, named, w) or _generic(f, named, w)
    if decided and decided[0] not in ("", "undefined"):
        return decided
    if (f.action or "").startswith("delay"):
        return "expired", "action: delayed"
    if w.says("vacation"):
        return "vacation", "vacation"
    return ("onhold", "no reason named") if f.diagnostic.strip() else ("undefined", "")
