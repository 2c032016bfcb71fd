"""The real `replyguard` command line, run inside the test process.

What a subprocess would give a test — its own environment, working directory, standard
streams, argv, exit code — without the second of interpreter start-up and imports each call
costs (a CLI test makes dozens of calls). The entry point is the installed script's own
(`launcher.main`: `inspect` before the rest of the CLI, every error turned into one line and an
exit code by `errors.report`), so the code under test is exactly what a person runs.

Whatever a command changes in the process is put back afterwards: environment, working
directory, streams, argv, the root logger (long commands configure it) and the SIGINT/SIGTERM
handlers. Commands that run until a signal (`up`, `serve`, `poll`, `listen`, `notify`
without `--once`) are tested in a real subprocess instead: the process is the point there.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from replyguard.entrypoints.cli import app as cli
from replyguard.entrypoints.cli.launcher import main


@dataclass(frozen=True)
class Ran:
    """What `subprocess.run(..., capture_output=True, text=True)` would have returned."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any REPLYGUARD_ setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGUARD_")}
    return env | extra


@contextmanager
def _process_state(env: Mapping[str, str], cwd: Path) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_argv = sys.argv
    root = logging.getLogger()
    saved_logging = (root.handlers[:], root.level)
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # The CLI's Rich consoles are made at import and keep the COLUMNS of that moment (xdist
    # workers run with COLUMNS=80); a fresh process would read this command's COLUMNS.
    consoles = [(console, console._width) for console in (cli.out, cli.err)]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for console, _ in consoles:
        console._width = None
    try:
        yield
    finally:
        for console, width in consoles:
            console._width = width
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers[:], level = saved_logging
        root.setLevel(level)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)


def run_cli(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path, input: str | bytes | None = None
) -> Ran:
    """Run `replyguard ARGS...` in this process and return its exit code and output."""
    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    out, err = io.BytesIO(), io.BytesIO()
    # Kept in locals: a wrapper that is collected closes the buffer it wraps.
    streams = (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    with _process_state(env, cwd):
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.argv = ["replyguard", *args]
        code: int = 0
        try:
            main()
        except SystemExit as exc:
            if isinstance(exc.code, str):  # sys.exit("message"): printed, exit 1
                sys.stderr.write(exc.code + "\n")
                code = 1
            else:
                code = exc.code or 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    ran = Ran(list(args), code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"))
    for stream in streams:
        stream.close()
    return ran
