"""Sending: claiming due steps, the re-check under the lead lock, the hand-over to the transport,
recording what happened, and recovering what a crash left behind."""
