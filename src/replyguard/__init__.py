"""replyguard: an outbound email sequence engine that stops when a person answers."""

__version__ = "0.1.0"
