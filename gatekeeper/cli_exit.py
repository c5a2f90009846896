"""How the command line ends: one line on stderr and an exit code, for a usage error, a signal
or gatekeeper's own crash (the codes are `exit_codes.py`'s)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from gatekeeper import exit_codes
from gatekeeper.errors import Terminated
from gatekeeper.redact import NONE, Redactor


_json_errors = False


def json_errors() -> None:
    """`--json` was asked for: an end without a verdict also prints a JSON object on stdout
    (`gatekeeper.error/1`), so a CI step that parses stdout always has something to read."""
    global _json_errors
    _json_errors = True


def fail(message: str, code: int, hint: str | None = None) -> NoReturn:
    """Print one line on stderr (with a hint in parentheses) and exit with `code`."""
    line = message + (f" ({hint})" if hint else "")
    click.echo(f"gatekeeper: error: {line}", err=True)
    if _json_errors:
        import json

        click.echo(json.dumps({"format": "gatekeeper.error/1", "exit_code": code, "error": line}))
    sys.exit(code)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise `Terminated` in the main thread (Python's default would end the
    process at once, skipping the `finally` that stops the engines a run started). Servers that
    handle these signals themselves (`serve`, `shadow`) install their own handlers later."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def crashed(e: BaseException, redactor: Redactor = NONE) -> NoReturn:
    """One line for a crash of gatekeeper itself, the traceback in a file, exit INTERNAL_ERROR (a
    CI step must not read a crash as ROLLBACK, whose code Python's default of 1 would be). Both
    pass through `redactor` (a run's keys)."""
    import tempfile
    import traceback

    fd, path = tempfile.mkstemp(prefix="gatekeeper-crash-", suffix=".txt")
    with open(fd, "w", encoding="utf-8") as out:
        out.write(redactor.text("".join(traceback.format_exception(e))))
    fail(redactor.text(f"internal error: {type(e).__name__}: {str(e)[:200]}"), exit_codes.INTERNAL_ERROR,
         f"a bug in gatekeeper, not a verdict; the traceback is in {path}")
