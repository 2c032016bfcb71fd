"""The trust model: which evidence an inbound message needs before it may do what it asks.

Anyone can send us a message that names a lead: a hand-made bounce with her address in
`Final-Recipient`, a spam complaint with her as `Original-Rcpt-To`, mail with her address in
`From`. Stopping her is always safe (it only hands her to a person); what the machine cannot
undo on its own — a suppression, an unsubscribe, a hard bounce, a pause of every product — is
granted only to a message that proves one of two things:

- it is **bound** to an email we sent: our Message-ID (an HMAC of the send key) in its
  In-Reply-To/References or in the returned message of a DSN/ARF, a provider event naming it,
  our signed unsubscribe address, or our signed bounce address (VERP, outgoing.bounce_address)
  among its recipients — and, for a reply, it comes from the lead's own address;
- or its sender is **authenticated and aligned** with the address it acts on: DMARC (or an
  aligned DKIM/SPF) pass, read from an Authentication-Results header of a configured trusted
  authserv-id (`REPLYGUARD_AUTHSERV_ID`), for the lead's own domain — or, for a bounce or a
  complaint, for her mailbox provider's domain (PROVIDER_DOMAINS). A pass from an unconfigured
  (topmost) header could have been written by the sender: it grants nothing.

Without that evidence the effect is replaced by its safe half (TRUST_TABLE): the lead stops
or is held, nothing is suppressed or unsubscribed, and a thread asks a person to confirm,
showing the evidence and the authentication verdict. A `fail` verdict for the From domain
always waits for a person, bound or not.

This is THE table: reply_policy.decide applies it, inbound_apply computes the Proof, and
docs/architecture.md prints it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from replyguard.domain.authentication import Verdict, aligned
from replyguard.domain.states import ReplyKind


class Binding(enum.StrEnum):
    """How a message is tied to an email we sent."""

    MESSAGE_ID = "message-id"  # our Message-ID in its thread headers or its returned message
    VERP = "verp"  # our signed bounce address among its recipients
    TOKEN = "unsubscribe-token"  # noqa: S105 - our signed unsubscribe address
    NONE = "none"


class Need(enum.StrEnum):
    NOTHING = "nothing"  # safe whatever its origin
    PROOF = "proof"  # bound (from her own address) or authenticated and aligned


@dataclass(frozen=True, slots=True)
class Rule:
    effect: str
    needs: Need
    without: str


#: Each reply kind: what it does with proof, and what it does without.
TRUST_TABLE: dict[ReplyKind, Rule] = {
    ReplyKind.HUMAN_REPLY: Rule("the lead stops; a thread for a person", Need.NOTHING, "(the same)"),
    ReplyKind.UNSUBSCRIBE: Rule(
        "every product of the contact unsubscribed; every address of hers suppressed",
        Need.PROOF,
        "the lead stops (replied, steps cancelled); a person confirms the unsubscribe",
    ),
    ReplyKind.BOUNCE_HARD: Rule(
        "the address suppressed; the lead bounced",
        Need.PROOF,
        "the lead is held (nothing sent); a person confirms the bounce",
    ),
    ReplyKind.OUT_OF_OFFICE: Rule(
        "every product of the contact paused until the return date",
        Need.PROOF,
        "the lead is held (nothing sent); a person confirms the pause",
    ),
    ReplyKind.AUTO_REPLY: Rule("logged; a left-company notice holds the lead", Need.NOTHING, "(the same)"),
    ReplyKind.BOUNCE_SOFT: Rule(
        "logged; the third that speaks about the recipient is a hard bounce (and needs its proof)",
        Need.NOTHING,
        "(the same)",
    ),
}

#: Mailbox providers whose bounces and complaints come from a domain other than the address's.
#: A custom domain hosted by one of them is not known without its MX record (not looked up).
PROVIDER_DOMAINS: dict[str, frozenset[str]] = {
    "gmail.com": frozenset({"google.com", "googlemail.com"}),
    "googlemail.com": frozenset({"google.com", "gmail.com"}),
    **{
        d: frozenset({"outlook.com", "hotmail.com", "microsoft.com", "live.com"})
        for d in ("outlook.com", "hotmail.com", "live.com", "msn.com")
    },
    **{d: frozenset({"yahoo.com", "yahoodns.net", "aol.com"}) for d in ("yahoo.com", "ymail.com", "aol.com")},
    **{d: frozenset({"icloud.com", "me.com", "mac.com", "apple.com"}) for d in ("icloud.com", "me.com")},
}


@dataclass(frozen=True, slots=True)
class Proof:
    """What an inbound message proves about itself (computed by inbound_apply)."""

    binding: Binding
    verdict: Verdict  # the receiving side's verdict for the From domain
    #: The From domain is authenticated (pass) by a trusted authserv-id AND aligned with one
    #: of the lead's addresses (see is_aligned). Alone it proves nothing about a stranger
    #: writing in her thread from her company's domain: sender_known must hold too.
    aligned: bool
    #: From the lead's own address, or the binding itself is the authority (a DSN/ARF's
    #: original, our signed address). False: a stranger writing in her thread.
    sender_known: bool = True

    @property
    def bound(self) -> bool:
        return self.binding is not Binding.NONE

    def evidence(self) -> tuple[str, ...]:
        return (f"bound:{self.binding}", f"aligned:{'yes' if self.aligned else 'no'}")


def is_aligned(
    from_domain: str, verdict: Verdict, *, trusted_header: bool, lead_domain: str, report: bool
) -> bool:
    """Whether an authenticated From domain speaks for `lead_domain`: her own domain (relaxed
    alignment), or, for a bounce or complaint (`report`), her mailbox provider's."""
    if verdict is not Verdict.PASS or not trusted_header or not from_domain or not lead_domain:
        return False
    if aligned(from_domain, lead_domain):
        return True
    return report and any(aligned(from_domain, p) for p in PROVIDER_DOMAINS.get(lead_domain, ()))


def needs_proof(kind: ReplyKind) -> bool:
    rule = TRUST_TABLE.get(kind)
    return rule is not None and rule.needs is Need.PROOF


def permits(kind: ReplyKind, proof: Proof) -> bool:
    """Whether `kind`'s whole effect may be applied on this proof (else its safe half)."""
    if not needs_proof(kind):
        return True
    if not proof.sender_known:  # a stranger in her thread, even one of her own company
        return False
    return proof.aligned or (proof.bound and proof.verdict is not Verdict.FAIL)


def explain(kind: ReplyKind, proof: Proof, sender: str, verdict_text: str) -> str:
    """Why a person must confirm: the evidence, and the authentication verdict, in one line."""
    what = {
        ReplyKind.BOUNCE_HARD: "a hard bounce",
        ReplyKind.OUT_OF_OFFICE: "an out-of-office",
        ReplyKind.UNSUBSCRIBE: "an unsubscribe request or complaint",
    }.get(kind, "a message")
    if not proof.sender_known:
        tie = "who is not one of her addresses, written in her thread"
    elif proof.bound:
        tie = "tied to an email we sent, but its sender failed authentication"
    else:
        tie = "names this lead but is tied to no email we sent (no Message-ID of ours, no signed address)"
    return f"{what} from {sender or 'an unknown sender'} {tie}; authentication: {verdict_text}"
