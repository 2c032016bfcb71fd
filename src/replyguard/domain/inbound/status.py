"""The status of one stored inbound message, and the moves between statuses. Pure.

```
stored ──process──▶ matched | probable | unmatched | unparsable | suspect
   │                 | ours | history | duplicate
   │                                   (each kept; probable, unmatched, unparsable and
   │                                    suspect for a person)
   └── processing failed MAX_ATTEMPTS times ──▶ quarantined ──a person retries──▶ stored
refused   over a limit at the door: the reason and the message's head are kept, nothing
          else happens (a person reads it, the original stays with the source)
```
"""

from __future__ import annotations

from enum import StrEnum


class InboundStatus(StrEnum):
    STORED = "stored"  # stored raw, not processed yet (or about to be retried)
    MATCHED = "matched"
    PROBABLE = "probable"
    UNMATCHED = "unmatched"
    UNPARSABLE = "unparsable"
    SUSPECT = "suspect"  # claims one of our mailboxes but fails authentication: a person looks
    OURS = "ours"  # our own outgoing mail read back (a Sent folder, Bcc-to-self): no effect
    HISTORY = "history"  # written before our first email to the lead: it only informs
    DUPLICATE = "duplicate"  # another copy of a message already applied (duplicate_of)
    QUARANTINED = "quarantined"  # processing failed every attempt: a person looks
    REFUSED = "refused"  # over a size or shape limit: not processed


#: Statuses a person is shown by default (`replyguard inbound list`).
NEEDS_A_PERSON = (
    InboundStatus.QUARANTINED,
    InboundStatus.REFUSED,
    InboundStatus.UNPARSABLE,
    InboundStatus.SUSPECT,
    InboundStatus.UNMATCHED,
    InboundStatus.PROBABLE,
)

_MOVES: dict[InboundStatus, frozenset[InboundStatus]] = {
    InboundStatus.STORED: frozenset(
        {
            InboundStatus.MATCHED,
            InboundStatus.PROBABLE,
            InboundStatus.UNMATCHED,
            InboundStatus.UNPARSABLE,
            InboundStatus.SUSPECT,
            InboundStatus.OURS,
            InboundStatus.HISTORY,
            InboundStatus.DUPLICATE,
            InboundStatus.QUARANTINED,
        }
    ),
    InboundStatus.QUARANTINED: frozenset({InboundStatus.STORED}),
}


#: The suffix of a source name whose messages are history (an import of old mail): they
#: inform a person and never stop a lead as a fresh reply would (`imap-history`, `file-history`).
HISTORY_SUFFIX = "-history"


def history_source(source: str) -> str:
    return source + HISTORY_SUFFIX


def is_history(source: str) -> bool:
    return source.endswith(HISTORY_SUFFIX)


#: Old mail read again (a folder under a new UIDVALIDITY, dated before what we had read): it
#: only informs, even when it answers our email — that answer was read, or left alone, before.
REPLAYED_SUFFIX = "-reread" + HISTORY_SUFFIX


def replayed_source(source: str) -> str:
    return source + REPLAYED_SUFFIX


def is_replayed(source: str) -> bool:
    return source.endswith(REPLAYED_SUFFIX)


#: What `inbound_messages.source` holds, and the part of it a reply records (`replies.source`).
SOURCE_LENGTH = 40
CHANNEL_LENGTH = 20
_FILE = "file:"


def file_source(origin: str, *, history: bool = False) -> str:
    """The source of a message read from a file: `file:` and where it was read (`in.mbox#3`),
    so that a person can find the file of a message kept for them. A path too long to fit
    keeps its end (the file name says most), after an ellipsis; `-history` for old mail."""
    suffix = HISTORY_SUFFIX if history else ""
    room = SOURCE_LENGTH - len(_FILE) - len(suffix)
    where = origin if len(origin) <= room else "…" + origin[-(room - 1) :]
    return f"{_FILE}{where}{suffix}"


def channel_of(source: str) -> str:
    """The kind of source without a file's path (`file`, `file-history`, `imap`, `mailgun`),
    at most CHANNEL_LENGTH characters: what a reply records as its source."""
    if not source.startswith(_FILE):
        return source[:CHANNEL_LENGTH]
    return "file" + (HISTORY_SUFFIX if is_history(source) else "")


class IllegalInboundMove(ValueError):
    pass


def check_inbound_move(before: str, after: InboundStatus) -> InboundStatus:
    """`after` if a message may move there from `before`; IllegalInboundMove otherwise."""
    if after not in _MOVES.get(InboundStatus(before), frozenset()):
        raise IllegalInboundMove(f"an inbound message cannot go from {before} to {after}")
    return after


def parse_status(value: str) -> InboundStatus:
    """A status from user input; ValueError naming the valid ones otherwise."""
    try:
        return InboundStatus(value.strip().lower())
    except ValueError:
        names = ", ".join(s.value for s in InboundStatus)
        raise ValueError(f"unknown status {value!r}: use one of {names}, or all") from None
