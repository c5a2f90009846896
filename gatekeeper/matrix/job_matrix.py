"""A matrix's cells as the job matrix of a CI system (`gatekeeper matrix plan`).

- json (format gatekeeper.matrix-plan/1): every cell with its id, axis values, the exact
  `gatekeeper run` argument list that runs it, its candidate target, declared path, policy
  fragment and expected verdict;
- github: one line of JSON for `strategy.matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}`,
  `{"include": [{"cell": ID, <axis>: <value>, ...}, ...]}` (at most 256 jobs, GitHub's limit);
- gitlab: YAML for a job's `parallel: matrix:`, one `CELL` variable listing the ids (at most 200
  jobs, GitLab's limit).

Axis values are strings as cell ids show them.
"""

from __future__ import annotations

import json

import yaml

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError
from gatekeeper.matrix.spec import Matrix

FORMAT = "gatekeeper.matrix-plan/1"
MAX_JOBS = {"github": 256, "gitlab": 200}


def run_argv(matrix_arg: str, cell_id: str, run_args: tuple[str, ...] = ()) -> list[str]:
    """The command line that runs one cell."""
    return ["gatekeeper", "run", "--matrix", matrix_arg, "--cell", cell_id, *run_args]


def plan_json(matrix: Matrix, matrix_arg: str, faults: tuple[str, ...] = ()) -> JsonObject:
    """The plan as data; `faults` are the candidate faults the cells will run with (they decide
    the expected verdicts and are part of each argument list)."""
    run_args = tuple(a for f in faults for a in ("--candidate-fault", f))
    return {
        "format": FORMAT,
        "matrix": {"name": matrix.name, "path": matrix_arg, "sha256": matrix.sha256, "description": matrix.description},
        "axes": {axis: list(values) for axis, values in matrix.axes},
        "candidate_faults": list(faults),
        "cells": [{"id": c.id, "axes": c.values, "argv": run_argv(matrix_arg, c.id, run_args), "candidate": c.target,
                   "declared": dict(c.declared), "policy": c.policy, "expected": matrix.expected(c, faults)}
                  for c in matrix.cells],
    }


def render_plan(matrix: Matrix, matrix_arg: str, fmt: str, faults: tuple[str, ...] = ()) -> str:
    """The plan in one of the formats (json, github, gitlab); the faults are checked as a run
    checks them (every job of a plan with a bad fault would fail alike)."""
    from gatekeeper.run.plan import check_faults

    check_faults(faults)
    if fmt in MAX_JOBS and len(matrix.cells) > MAX_JOBS[fmt]:
        raise ConfigError(f"{len(matrix.cells)} cells: a {fmt} job matrix takes at most {MAX_JOBS[fmt]} jobs "
                          "(exclude some, or split the matrix)", matrix.path, key="axes")
    if fmt == "json":
        return json.dumps(plan_json(matrix, matrix_arg, faults), indent=2)
    if fmt == "github":
        return json.dumps({"include": [{"cell": c.id, **c.values} for c in matrix.cells]}, separators=(",", ":"))
    if fmt == "gitlab":
        return yaml.safe_dump({"parallel": {"matrix": [{"CELL": [c.id for c in matrix.cells]}]}}, sort_keys=False,
                              default_flow_style=False, width=1000).rstrip()
    raise ValueError(f"unknown plan format {fmt!r}")
