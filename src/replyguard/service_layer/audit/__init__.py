"""The audit: the article's six checks run on a live campaign with canary leads, and the checks of
a configuration before it goes live."""
