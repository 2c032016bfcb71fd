"""A sisimai-like reason taxonomy for delivery failures, and hard/soft from it.

Contract: `reason_for(status, action, text)` names why a delivery failed, reading the
diagnostic text first because the status code alone misleads (mailbox full arrives as 5.2.2,
"max message size exceeded" as 5.1.1), then the status code. `is_hard(reason)` is True only
when the address itself is unusable: it does not exist, its domain does not exist, it moved,
or the account is disabled. Everything else (full, too big, delayed, blocked, spam, rate
limits, network trouble) is soft: the address is fine and a later send may pass.
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.phrases import compile_lower

HARD_REASONS = frozenset({"userunknown", "hostunknown", "hasmoved", "notaccept", "suspend"})

# Order matters: the first family found in the diagnostic text wins.
_TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, compile_lower(src))
    for reason, src in (
        (
            "mailboxfull",
            r"mailbox (?:is )?full|mail ?box (?:space )?(?:is )?not enough|over ?quota|quota|"
            r"insufficient (?:disk )?(?:space|storage)|mailbox size limit|disk full|"
            r"exceeds? (?:the )?(?:allowed|available) (?:size|storage)|mailbox exceeds|"
            r"storage (?:space|limit)|postfach (?:ist )?voll|boîte (?:aux lettres )?pleine|"
            r"buzón (?:está )?lleno|casella (?:piena|è piena)|out of storage|"
            r"too much mail|full mailbox|mailbox has exceeded",
        ),
        (
            "mesgtoobig",
            r"message (?:is )?too (?:large|big)|message size exceeds|exceed(?:s|ed)? (?:the )?"
            r"(?:maximum )?(?:incoming )?message size|max(?:imum)? message size|size limit|"
            r"recipsizelimit|message length exceeds|too large",
        ),
        (
            "hasmoved",
            r"has moved|address (?:has )?changed|no longer (?:at|with) this address",
        ),
        (
            "suspend",
            r"account (?:has been |is )?(?:disabled|deactivated|discontinued|suspended|closed|"
            r"inactive|locked|expired)|(?:disabled|deactivated|inactive|suspended) "
            r"(?:account|mailbox|user)|mailbox (?:is )?(?:disabled|inactive)|"
            r"deactivated mailbox|is disabled",
        ),
        (
            "userunknown",
            r"user unknown|unknown user|no such (?:user|mailbox|recipient|account|person|"
            r"address)|(?:does not|doesn't|did not) exist|not (?:a )?valid (?:user|recipient|"
            r"mailbox|address)|invalid (?:recipient|mailbox|user|address)|recipient "
            r"(?:address )?(?:rejected|unknown|not found|invalid)|address (?:not found|"
            r"rejected|unknown)|mailbox (?:unavailable|not found|does not exist|unknown)|"
            r"not listed in|unknown (?:or illegal )?(?:alias|local[- ]part|recipient|mailbox)|"
            r"no account by that name|user not found|not recognized|couldn't be found|"
            r"unrouteable address|bad destination mailbox|nie istnieje|existiert nicht|"
            r"unbekannt|inconnu|n'existe pas|no existe|non esiste|не существует|"
            r"no mailbox here|account (?:does not|doesn't) exist|address doesn't exist|"
            r"no longer (?:valid|available)|not our customer|mailbox not allowed|"
            r"recipient not found|did not (?:exactly )?match",
        ),
        (
            "hostunknown",
            r"host (?:unknown|not found)|unknown host|domain (?:not found|does not exist|"
            r"name not found)|no such domain|name or service not known|nxdomain|"
            r"host or domain name not found|unrouteable domain|no mx|dns (?:error|lookup)",
        ),
        (
            "spamdetected",
            r"\bspam\b|junk mail|content (?:rejected|filter)|looks like spam|bulk mail",
        ),
        (
            "blocked",
            r"block(?:ed|list)|blacklist|black list|\brbl\b|reputation|listed (?:at|in|on)|"
            r"not accepting (?:mail|messages) from|refused to accept|access denied.{0,40}ip|"
            r"client host .{0,40}rejected|sender (?:address )?rejected|poor reputation|"
            r"not allowed",
        ),
        (
            "policyviolation",
            r"policy|not (?:authori[sz]ed|permitted)|prohibit\w*|denied|relay(?:ing)? denied",
        ),
        (
            "toomanyconn",
            r"too many (?:connections|messages|recipients)|rate limit|try again later|"
            r"temporarily (?:deferred|rejected|unavailable)|throttl",
        ),
        (
            "expired",
            r"delay(?:ed)?|deferred|retry (?:time|timeout)|not yet been delivered|"
            r"could not be delivered (?:within|for)|queue (?:period|timeout|time)|gave up|"
            r"too long in (?:the )?queue|maximum (?:delivery )?attempts|delivery attempts|"
            r"has not been delivered|will (?:continue|keep) trying|still trying|"
            r"\b\d+ (?:delivery )?attempts|will be retried|warning message only",
        ),
        (
            "networkerror",
            r"timed? ?out|connection (?:refused|reset|lost|timed)|not reachable|unreachable|"
            r"unable to connect|could not connect|network error|no route to host|"
            r"server did not respond|did not respond",
        ),
    )
)

_STATUS_REASONS = {
    "5.1.1": "userunknown", "5.1.0": "userunknown", "5.1.10": "userunknown",
    "5.1.2": "hostunknown", "5.4.4": "hostunknown", "5.1.6": "hasmoved",
    "5.2.1": "suspend", "5.2.2": "mailboxfull", "5.2.3": "mesgtoobig",
    "5.3.4": "mesgtoobig", "5.4.1": "userunknown", "5.5.0": "userunknown",
}  # fmt: skip


def reason_for(status: str | None, action: str | None, texts: tuple[str, ...]) -> str:
    """The failure reason for one recipient: the first text that names one, then the status.

    Pass the recipient's own Diagnostic-Code before the notice's prose, so that a clear
    diagnostic is not overridden by boilerplate elsewhere in the notice.
    """
    action = (action or "").lower()
    # "Action: failed" is final even with a 4.x.x status: the MTA gave up. Only a delayed
    # action, or a bare 4.x.x with no action, is a warning.
    delayed = action.startswith("delay") or (not action and (status or "").startswith("4."))
    for text in texts:
        lowered = text.lower()
        for reason, pattern in _TEXT_RULES:
            if pattern.search(lowered):
                if delayed and reason in HARD_REASONS:
                    continue  # a temporary failure cannot prove the address is gone
                return reason
    if delayed or (status or "").startswith("4."):
        return "expired"
    if status:
        if status in _STATUS_REASONS:
            return _STATUS_REASONS[status]
        if status.startswith("5.7."):
            return "blocked"
        if status.startswith("5.1."):
            return "userunknown"
        if status.startswith("5.2."):
            return "mailboxfull"
        if status.startswith("5.4."):
            return "networkerror"
    return "undefined"


def is_hard(reason: str, status: str | None) -> bool:
    """True when the address itself is unusable; undefined permanent failures count as hard."""
    if reason in HARD_REASONS:
        return True
    return reason in {"undefined", "onhold"} and not (status or "").startswith("4.")
