"""Inbound: every message stored first, then classified, matched to its lead and applied — THE reply
transaction, unsubscribes, quarantine, and the pollers and webhooks that feed it."""
