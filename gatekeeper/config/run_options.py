"""The resolved run options, typed: `RunOptions` (one frozen field per entry of
`config/option_table.OPTIONS`, filled by `config/run_config.resolve`) and `OptionSources`, the
layer each came from, which also says how the user wrote an option when an error names it.

They flow one way: resolve → (a matrix cell's layer, `matrix/cell_run.apply_cell`) →
`run/plan.build_plan` → the RunPlan, which carries them on (`plan.options`, `plan.sources`): the
fingerprint hashes them and plan.json records `RunOptions.as_json()` with the sources, from which
`gatekeeper rejudge` rebuilds them (`RunOptions.from_values`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Union

from gatekeeper.config.option_table import BY_NAME, OPTIONS

# A target as given: `bundled[:profile]`, a URL, or a mapping (targets/spec.parse_target reads it).
TargetValue = Union[str, Mapping[str, object]]


@dataclass(frozen=True)
class RoleOptions:
    """The options of one target's role (`--reference-…` or `--candidate-…`)."""

    declare: Mapping[str, str]
    key_env: str | None
    log_file: str | None
    log_command: str | None


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The run's options after every layer (defaults → run config → GATEKEEPER_* → flags); each
    field is the option of that name in `option_table.OPTIONS`, which documents it."""

    reference: TargetValue
    candidate: TargetValue
    model: str | None
    served_model: str | None
    policy: str
    golden: tuple[str, ...]
    gates: tuple[str, ...] | None
    out: str
    seed: int
    timeout: float
    cases: tuple[str, ...]
    limit: int | None
    candidate_faults: tuple[str, ...]
    candidate_opts: Mapping[str, str]
    candidate_declare: Mapping[str, str]
    reference_declare: Mapping[str, str]
    reference_key_env: str | None
    candidate_key_env: str | None
    reference_log_file: str | None
    candidate_log_file: str | None
    reference_log_command: str | None
    candidate_log_command: str | None
    reference_cache: str | None
    report_url: str | None
    on_rollback: tuple[str, ...]
    matrix: str | None
    cell: str | None
    shadow_store: str | None

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> RunOptions:
        """RunOptions from each option's parsed value (lists become tuples); an option missing
        from `values` takes its default, a name the table does not know is ignored (plan.json
        of an older run)."""
        given = {name: values[name] if name in values else BY_NAME[name].default for name in BY_NAME}
        return cls(**{name: tuple(v) if isinstance(v, list) else v for name, v in given.items()})  # type: ignore[arg-type]

    def as_json(self) -> dict[str, object]:
        """The options by name, in the table's order, as plain JSON values (plan.json, the
        options hashes of a cell and of a resumable plan)."""
        return {o.name: _plain(getattr(self, o.name)) for o in OPTIONS}

    def role(self, role: str) -> RoleOptions:
        """The declared path, key variable and log source given for `role`."""
        if role == "reference":
            return RoleOptions(self.reference_declare, self.reference_key_env, self.reference_log_file,
                               self.reference_log_command)
        assert role == "candidate", role
        return RoleOptions(self.candidate_declare, self.candidate_key_env, self.candidate_log_file,
                           self.candidate_log_command)


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


@dataclass(frozen=True)
class OptionSources(Mapping[str, str]):
    """Where each option came from: "default", the run config's path, "env", "flag" (or, for a
    matrix cell's candidate and policy, the matrix file)."""

    layers: Mapping[str, str]

    def __getitem__(self, name: str) -> str:
        return self.layers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def with_layer(self, name: str, source: str) -> OptionSources:
        """These sources with `name` coming from `source`."""
        return OptionSources({**self.layers, name: source})

    def file_of(self, name: str) -> str | None:
        """The run config the option came from, or None (a default, a variable, a flag): what
        its errors name as the file."""
        source = self.layers[name]
        return source if source not in ("default", "flag", "env") else None

    def label(self, name: str) -> str:
        """How the user wrote the option: its flag, its variable, or its key in the run config."""
        option, source = BY_NAME[name], self.layers[name]
        if source == "flag":
            return option.flag_name
        return option.env if source == "env" else name


assert [f.name for f in fields(RunOptions)] == list(BY_NAME), "RunOptions and option_table.OPTIONS differ"
