"""Print what a run's blocking checks would have caught, as one markdown table per gate.

    python scripts/limits_table.py REPORTS/<run-id>/summary.json [--all]

Reads `summary.json` (docs/summary-schema.md) and prints, for every blocking check (`--all`: every
check), its status and its detection limit (`detection_limit.text`), or why it states none: a
PASS without one is named "no limit stated". docs/detection-limits.md's table of the default
policy's limits was printed by this script from a default bundled run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def rows(summary: dict[str, Any], every: bool) -> list[tuple[str, str, str, str]]:
    """(gate, check, status, limit) for the blocking checks of `summary` (every check with `every`)."""
    out = []
    for gate in summary.get("gates", []):
        for check in gate.get("checks", []):
            if not (every or check.get("blocking")):
                continue
            status = "UNDECIDED" if check.get("undecided") else check.get("status", "?")
            limit = (check.get("detection_limit") or {}).get("text")
            if limit is None:
                limit = "no limit stated" if check.get("status") == "PASS" else "–"
            out.append((gate.get("id", "?"), check.get("id", "?"), status, limit))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the table; 1 with a one-line error when the file cannot be read."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary", type=Path, help="a run's summary.json")
    parser.add_argument("--all", action="store_true", help="every check, advisory ones too")
    args = parser.parse_args(argv)
    try:
        summary = json.loads(args.summary.read_text())
    except (OSError, ValueError) as e:
        print(f"error: {args.summary}: cannot read a summary.json ({e})", file=sys.stderr)
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
