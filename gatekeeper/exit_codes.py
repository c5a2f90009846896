"""The process exit codes, in one place: documented in the README and stable for CI.

`gatekeeper run` exits with the verdict's code; every command exits USAGE on a bad flag or
configuration and INTERNAL_ERROR when gatekeeper itself crashes; `gatekeeper serve` and
`gatekeeper golden record` exit STARTUP_FAILURE when the engine they need cannot start.
"""

from __future__ import annotations

OK = 0
PROMOTE = 0  # every blocking check passed
ROLLBACK = 1  # a blocking check failed: a regression against the reference
STARTUP_FAILURE = 1  # serve / golden record: the engine could not start (no verdict is involved)
HOLD = 2  # something could not be judged: an ERROR, a blocking SKIP or undecided check, an advisory FAIL
USAGE = 3  # a bad flag or configuration (file, line and key are named); a dry run's unusable URL target
INTERNAL_ERROR = 4  # gatekeeper itself crashed (a bug): no verdict, never ROLLBACK's code
INTERRUPTED = 130  # Ctrl-C

FOR_VERDICT = {"PROMOTE": PROMOTE, "ROLLBACK": ROLLBACK, "HOLD": HOLD}
