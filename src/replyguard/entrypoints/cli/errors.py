"""How the command line reports a failure: one line on stderr and a documented exit code.

A person who typed a wrong address, a wrong database URL or a date in the past needs to read
what is wrong and what to do, not 450 lines of traceback. Services raise their own exceptions
(`ValueError` and `LookupError` subclasses for bad input, `OSError` for files); this module is
the one place that turns any of them into a line of text. `--debug` (or REPLYGUARD_DEBUG=1)
lets the exception through with its traceback.

A wrong option or argument is one line too (`report_usage`): Click's own report is a box of
five lines.

Exit codes (README, "Errors and exit codes"):

* 0: done.
* 1: a problem with the data or the database: not found, refused; or part of the input
  refused and the rest done (skipped rows, skipped leads, files that are not email).
* 2: the command line or a configuration value is wrong: an option, argument, date, URL or
  file format; SMTP without REPLYGUARD_PUBLIC_URL.
* 70: a bug in replyguard: please report it, with the output of `--debug`.
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer._click.exceptions import ClickException

EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_BUG = 70
EXIT_INTERRUPTED = 130


def describe(exc: BaseException) -> tuple[int, str]:
    """(exit code, one line) for an exception that reached the top of a command."""
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

    from replyguard.adapters.db.engine import DatabaseUrlError, DriverMissing

    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(exc, DriverMissing):
        return EXIT_USAGE, _first_line(exc)
    if isinstance(exc, DatabaseUrlError | ArgumentError | NoSuchModuleError):
        return EXIT_USAGE, f"{_first_line(exc)} (set --db or REPLYGUARD_DATABASE_URL)"
    if isinstance(exc, OperationalError):
        reason = _database_reason(exc)
        if "no such table" in reason:
            return EXIT_PROBLEM, f"the database is not set up: run `replyguard init` ({reason})"
        return EXIT_PROBLEM, f"cannot open the database: {reason}"
    if isinstance(exc, DBAPIError):
        reason = _first_line(exc.orig) if exc.orig is not None else _first_line(exc)
        if "no such table" in reason or "does not exist" in reason:
            return EXIT_PROBLEM, f"the database is not set up: run `replyguard init` ({reason})"
        return EXIT_PROBLEM, f"the database refused the change: {reason}"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return EXIT_PROBLEM, f"{where}{exc.strerror or _first_line(exc)}"
    if isinstance(exc, ValueError | LookupError):
        return EXIT_PROBLEM, _first_line(exc)
    return EXIT_BUG, (
        f"internal error ({exc.__class__.__name__}: {_first_line(exc)}); "
        "rerun with --debug for the traceback and please report it"
    )


def _database_reason(exc: BaseException) -> str:
    reason = _first_line(getattr(exc, "orig", None) or exc)
    if "unable to open database file" in reason:
        return f"{reason} (does the folder exist, and may this user write there?)"
    if "readonly" in reason or "read-only" in reason:
        return f"{reason} (the file or its folder is read-only)"
    return reason


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    # SQLAlchemy appends "(Background on this error at: ...)" and the statement: not for people.
    line = text.splitlines()[0] if text else exc.__class__.__name__
    return line.removeprefix("(psycopg.OperationalError) ").removeprefix("(sqlite3.OperationalError) ")


def debug_requested(argv: list[str]) -> bool:
    from replyguard.settings import debug_requested as from_environment

    return "--debug" in argv or from_environment()


def report(exc: BaseException) -> int:
    """Print the one line for `exc` on stderr; return the exit code."""
    code, line = describe(exc)
    sys.stderr.write(f"error: {line}\n")
    return code


def report_usage(exc: ClickException) -> int:
    """A wrong option or argument, as one line with where to read about the command."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    where = f" (see `{ctx.command_path} -h`)" if ctx is not None else ""
    sys.stderr.write(f"error: {message}{where}\n")
    return exc.exit_code


def report_aborted() -> int:
    """A question (`campaign update`) met the end of its input: nothing was done."""
    sys.stderr.write("error: no answer (end of input): nothing changed\n")
    return EXIT_PROBLEM
