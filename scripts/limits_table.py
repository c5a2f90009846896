"""Print what a run's blocking checks would have caught, as one markdown table per gate.

    python scripts/limits_table.py REPORTS/<run-id>/summary.json [--all]

Reads `summary.json` through the typed, schema-checked reader (`gatekeeper.run_summary`) and
prints, for every blocking check (`--all`: every check), its status and its detection limit (what
`DetectionLimit.text` says), or why it states none: a PASS without one is named "no limit stated".
docs/detection-limits.md's table of the default policy's limits was printed by this script from a
default bundled run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gatekeeper.results import Status
from gatekeeper.run_summary import SUMMARY_FILE, RunSummary, SummaryError, read_summary


def rows(summary: RunSummary, every: bool) -> list[tuple[str, str, str, str]]:
    """(gate, check, status, limit) for the blocking checks of `summary` (every check with `every`)."""
    out = []
    for gate in summary.gates:
        for check in gate.checks:
            if not (every or check.blocking):
                continue
            status = "UNDECIDED" if check.undecided else check.status.value
            limit = check.detection_limit.text() if check.detection_limit is not None else \
                "no limit stated" if check.status is Status.PASS else "–"
            out.append((gate.id, check.id, status, limit))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the table; 1 with a one-line error when the file cannot be read."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary", type=Path, help="a run's summary.json (or its run directory)")
    parser.add_argument("--all", action="store_true", help="every check, advisory ones too")
    args = parser.parse_args(argv)
    run_dir = args.summary if args.summary.is_dir() else args.summary.parent
    try:
        if not args.summary.is_dir() and args.summary.name != SUMMARY_FILE:
            raise SummaryError(args.summary, f"not a {SUMMARY_FILE}")
        summary = read_summary(run_dir)
    except SummaryError as e:  # the typed reader's named errors: missing, unreadable, not a summary, another format
        print(f"error: {args.summary}: cannot read a summary.json ({e.why})", file=sys.stderr)
        return 1
    table = rows(summary, args.all)
    print("| gate | check | status | what a PASS would have caught |\n|---|---|---|---|")
    for gate, check, status, limit in table:
        escaped = limit.replace("|", "\\|")  # |Δ logprob| inside a markdown table cell
        print(f"| {gate} | `{check}` | {status} | {escaped} |")
    missing = sum(1 for _, _, status, limit in table if status == "PASS" and limit == "no limit stated")
    print(f"\n{len(table)} checks; {missing} blocking PASS without a stated limit", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
