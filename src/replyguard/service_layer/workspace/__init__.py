"""The workspace: users and their sign-in, API tokens, campaigns and their changes, leads and
enrollment, mailboxes and their connected accounts."""
