"""Inbound message classification: pure domain, no database.

`classify(raw)` tells a human reply from an out-of-office, another automatic reply, a hard
or soft bounce and an unsubscribe request, extracts the new text and the return date.
"""

from replyguard.domain.inbound.bounce import BounceInfo
from replyguard.domain.inbound.classify import Classification, classify, classify_message
from replyguard.domain.inbound.parse import MessageParseError
from replyguard.domain.inbound.subjects import normalize_subject

__all__ = [
    "BounceInfo",
    "Classification",
    "MessageParseError",
    "classify",
    "classify_message",
    "normalize_subject",
]
