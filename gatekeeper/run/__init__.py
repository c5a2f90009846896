"""One run, from options to verdict: `plan.py` (options → a validated `RunPlan`; a gate's
`validate` runs here, before any engine starts) with `plan_probe.py` and `plan_warnings.py`
(`--dry-run`'s probes and the plan's warnings), `runner.py` (starts the targets, runs the gates
in stage order, decides, writes the reports) with `probed.py` (each target's capabilities, probed
once on first use), `rejudge.py` (the runner on recorded answers),
`run_dir.py` (the run directory: plan.json, incomplete.json, `--resume`)."""
