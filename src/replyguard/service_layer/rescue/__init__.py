"""Rescue: what waits for a person — threads, their versions and views, decisions, drafts, notices
and the person's own answer."""
