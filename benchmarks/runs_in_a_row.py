"""Whole `gatekeeper run`s in a row, to quote a real-engine result only after three of them.

    python benchmarks/runs_in_a_row.py [-c vllm-upgrade.yaml -c vllm-same.yaml] [--runs 3] [--out DIR]
                                       [-- EXTRA RUN ARGS...]

Each config is run `--runs` times; with several configs they are interleaved (A B, A B, ...), so
every pair of configs sees the same drift of a shared machine; with none, the README's default run
(the bundled pair). Each run is a fresh `gatekeeper run [-c CONFIG] --out DIR/<config stem>`
process (`default` without a config); arguments after `--` go to every run
(e.g. `-- --gates performance --policy vllm-perf.yaml`). Printed per run, as it ends: the
verdict and exit code, the wall time, each gate's minutes and the first reason; at the end, per
config, the verdicts counted and the times (median, max). Every finished run is appended to
DIR/runs.jsonl, so a sitting that has to stop is resumed with `--tally DIR` for the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from run_util import gk_run  # noqa: E402


def one_run(config: Path | None, out: Path, extra: list[str]) -> dict:
    """One `gatekeeper run` (with `config`, or the default run; `run_util.gk_run`): its verdict,
    exit code, wall time, gate times and first reason."""
    t0 = time.monotonic()
    run = gk_run(out, *(["-c", str(config)] if config else []), *extra, timeout=4 * 3600)
    row: dict = {"config": config.name if config else "default", "exit_code": run.code,
                 "seconds": round(time.monotonic() - t0, 1)}
    if run.summary is None:
        return {**row, "verdict": None, "error": " | ".join(run.stderr.strip().splitlines()[-3:])}
    reasons = run.summary.get("reasons") or []
    return {**row, "run": run.summary["run_id"], "verdict": run.summary["verdict"],
            "gates": {g["id"]: round(g["duration_s"] / 60, 2) for g in run.summary["gates"]},
            "first_reason": reasons[0][:300] if reasons else ""}


def show(row: dict) -> None:
    """One finished run, on two lines."""
    gates = ", ".join(f"{k} {v:.1f}" for k, v in (row.get("gates") or {}).items())
    print(f"{row['config']}: {row['verdict'] or 'no summary'} (exit {row['exit_code']}) in {row['seconds'] / 60:.1f} min"
          + (f"; gate minutes: {gates}" if gates else ""), flush=True)
    print(f"    {row.get('first_reason') or row.get('error') or ''}", flush=True)


def table(rows: list[dict]) -> None:
    """Per config: runs, verdicts counted, minutes (median, max)."""
    print(f"\n{'config':28s} {'runs':>4s}  {'verdicts':30s} {'min p50':>7s} {'max':>5s}")
    for config in dict.fromkeys(r["config"] for r in rows):
        rs = [r for r in rows if r["config"] == config]
        verdicts = ", ".join(f"{v} {sum(1 for r in rs if (r['verdict'] or 'none') == v)}"
                             for v in dict.fromkeys(r["verdict"] or "none" for r in rs))
        minutes = [r["seconds"] / 60 for r in rs]
        print(f"{config:28s} {len(rs):4d}  {verdicts:30s} {statistics.median(minutes):7.1f} {max(minutes):5.1f}")


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", action="append", type=Path, default=[], help="a run config (repeatable; none: the default run)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each config")
    ap.add_argument("--out", type=Path, default=Path("reports/runs-in-a-row"))
    ap.add_argument("--tally", action="store_true", help="print the table of DIR/runs.jsonl and run nothing")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    log = args.out / "runs.jsonl"
    if args.tally:
        table([json.loads(line) for line in log.read_text().splitlines() if line.strip()])
        return
    configs: list[Path | None] = list(args.config) or [None]
    for config in args.config:
        if not config.is_file():
            ap.error(f"{config}: no such config")
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for k in range(args.runs):
        for config in configs:
            print(f"run {k + 1} of {args.runs}: {config or 'the default run'} ...", flush=True)
            row = one_run(config, args.out / (config.stem if config else "default"), extra)
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            show(row)
            rows.append(row)
    table(rows)


if __name__ == "__main__":
    main()
