"""One cell as one run: the run's options with the cell applied, and the record (`cell.json`)
that marks the run directory as the cell's.

The cell is a layer over the resolved options (defaults → run config → environment → flags):
it sets the candidate (its filled target, declaring the cell's path) and, where the matrix has
policy fragments for it, the policy (the run's policy with them merged, written into the run
directory as `cell-policy.yaml`). Engine options and declarations the run adds are kept beside
the cell's; one that contradicts the cell is an error, since the run would no longer be the cell.

cell.json (format gatekeeper.cell/1) holds the matrix's name, path and hash, the cell's id, axis
values and declared path, the verdict expected of it in this run, the candidate faults, and a
hash of the run options (`options_sha256`), so `gatekeeper matrix run` can tell a finished cell
run with the same matrix and options (kept) from one that must run again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gatekeeper.json_types import JsonObject
from gatekeeper.config.run_config import find_file
from gatekeeper.config.run_options import OptionSources, RunOptions
from gatekeeper.config.yaml_lines import load_yaml
from gatekeeper.errors import ConfigError
from gatekeeper.matrix.cell import Cell
from gatekeeper.matrix.spec import Matrix, load_matrix, merge_fragments, plain
from gatekeeper.atomic import write_atomic
from gatekeeper.targets.interface import normalise_dtype
from gatekeeper.targets.spec import parse_declared

FORMAT = "gatekeeper.cell/1"
CELL_FILE = "cell.json"
POLICY_FILE = "cell-policy.yaml"
_NOT_OPTIONS = ("out", "matrix", "cell")  # where reports go and which cell: not what the verdict depends on


def options_sha256(options: RunOptions) -> str:
    """A hash of the resolved run options a cell's verdict depends on (all but `out`, `matrix`
    and `cell`), and of the policy file's bytes, which its path alone does not pin."""
    relevant = {k: v for k, v in options.as_json().items() if k not in _NOT_OPTIONS}
    policy = find_file(options.policy or "")
    relevant["policy_sha256"] = hashlib.sha256(policy.read_bytes()).hexdigest() if policy.is_file() else None
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class CellRun:
    """A run of one cell: the matrix and cell, the verdict expected of it (None: none), the
    candidate faults of the run, and the options hash."""

    matrix: Matrix
    cell: Cell
    expected: str | None
    faults: tuple[str, ...]
    options_sha256: str

    def record(self, run_id: str) -> JsonObject:
        """cell.json's content."""
        return {"format": FORMAT, "matrix": {"name": self.matrix.name, "path": self.matrix.path, "sha256": self.matrix.sha256},
                "cell": self.cell.id, "axes": self.cell.values, "declared": dict(self.cell.declared),
                "candidate": self.cell.target, "expected": self.expected, "candidate_faults": list(self.faults),
                "options_sha256": self.options_sha256, "run_id": run_id}

    def write(self, run_dir: Path, run_id: str) -> Path:
        """Write cell.json into the run directory (atomically), before the run starts, so even a
        run that dies belongs to its cell."""
        run_dir.mkdir(parents=True, exist_ok=True)
        return write_atomic(run_dir / CELL_FILE, json.dumps(self.record(run_id), indent=2) + "\n")


def apply_cell(options: RunOptions, sources: OptionSources, run_dir: Path) -> tuple[RunOptions, OptionSources, CellRun]:
    """The options with the cell `options.cell` of the matrix `options.matrix` applied (one more
    layer: the cell's candidate and policy), their sources, and the CellRun. A merged policy is
    written into `run_dir` (created if needed)."""
    if not options.matrix or not options.cell:
        missing = "--cell" if options.matrix else "--matrix"
        raise ConfigError(f"--matrix and --cell go together (`gatekeeper matrix plan M` lists the cells); {missing} is missing",
                          key=missing.lstrip("-"))
    matrix = load_matrix(options.matrix)
    cell = matrix.cell(options.cell)
    if sources["candidate"] != "default":
        given = {"flag": "--candidate", "env": "GATEKEEPER_CANDIDATE"}.get(sources["candidate"], f"candidate in {sources['candidate']}")
        raise ConfigError(f"the matrix's candidate template sets the candidate of cell {cell.id}; drop {given}", key="candidate")
    faults = options.candidate_faults
    run = CellRun(matrix, cell, matrix.expected(cell, faults), faults, options_sha256(options))
    _no_contradiction(cell.target.get("options", {}), dict(options.candidate_opts), cell, "--candidate-opt")
    _no_contradiction(dict(cell.declared), parse_declared(dict(options.candidate_declare), "candidate_declare"), cell,
                      "--candidate-declare")
    out = replace(options, candidate={**cell.target, "declare": dict(cell.declared)})
    where = sources.with_layer("candidate", matrix.path)
    if cell.policy:
        out = replace(out, policy=str(write_policy(run_dir, options.policy, matrix, cell)))
        where = where.with_layer("policy", f"{sources['policy']} + {matrix.path}")
    return out, where, run


def _no_contradiction(cell_values: dict[str, str], run_values: dict[str, str], cell: Cell, flag: str) -> None:
    """A ConfigError if the run sets a key the cell sets, to something else (dtypes compared by
    meaning: bf16 is bfloat16)."""
    def same(key: str, a: str, b: str) -> bool:
        if "dtype" in key:
            return (normalise_dtype(a) or a.lower()) == (normalise_dtype(b) or b.lower())
        return a.lower() == b.lower()

    for key, value in run_values.items():
        if key in cell_values and not same(key, str(cell_values[key]), str(value)):
            raise ConfigError(f"{key}={value} contradicts cell {cell.id}, which sets {key}={cell_values[key]}", key=flag)


def write_policy(run_dir: Path, base: str, matrix: Matrix, cell: Cell) -> Path:
    """The run's policy with the cell's fragments merged in, written to the run directory."""
    base_path = find_file(base)
    data = plain(load_yaml(base_path))
    if not isinstance(data, dict):
        raise ConfigError("a policy must be a YAML mapping", str(base_path))
    assert cell.policy is not None
    merged = merge_fragments(data, cell.policy)
    merged["name"] = f"{data.get('name', base_path.stem)}+{matrix.name}"
    merged["description"] = f"{base_path} with the policy fragments of matrix {matrix.path} for cell {cell.id}"
    run_dir.mkdir(parents=True, exist_ok=True)
    header = f"# Written by gatekeeper: {base_path} merged with {matrix.path}'s policy for cell {cell.id}.\n"
    return write_atomic(run_dir / POLICY_FILE, header + yaml.safe_dump(merged, sort_keys=False, allow_unicode=True))


def read_record(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's cell.json, or None (absent, unreadable, or another format)."""
    try:
        record = json.loads((run_dir / CELL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("format") == FORMAT else None
