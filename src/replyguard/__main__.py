"""`python -m replyguard`: the same CLI as the `replyguard` script."""

from replyguard.entrypoints.cli.launcher import main

main()
