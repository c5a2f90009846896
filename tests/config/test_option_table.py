"""The option table is the one place run options are written: the click options of every command
that takes them, RunOptions' fields and the resolved values cannot drift from it."""

from __future__ import annotations

import dataclasses

import click
import pytest

from gatekeeper.cli import main
from gatekeeper.config.option_table import BY_NAME, OPTIONS
from gatekeeper.config.run_config import resolve
from gatekeeper.config.run_options import RunOptions


def _command(*path: str) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _table_params(command: click.Command) -> dict[str, click.Option]:
    params = [p for p in command.params if isinstance(p, click.Option) and p.name in BY_NAME]
    names = [p.name for p in params]
    assert len(names) == len(set(names)), f"a run option has two click options: {names}"
    return {p.name: p for p in params if p.name}


@pytest.mark.parametrize("path, expected", [
    (("run",), set(BY_NAME)),
    (("matrix", "run"), set(BY_NAME) - {"matrix", "cell"}),
    (("perf", "calibrate"), {"candidate", "model", "served_model", "policy", "out", "candidate_opts",
                             "candidate_faults", "seed", "timeout"}),
])
def test_every_flag_is_its_table_entry(path, expected):
    command = _command(*path)
    params = _table_params(command)
    assert set(params) == expected
    unset = command.make_context("gatekeeper", [], resilient_parsing=True).params  # what no flag gives resolve
    for name, param in params.items():
        option = BY_NAME[name]
        assert param.opts == [option.flag_name] and not param.secondary_opts, name
        assert param.help == option.full_flag_help, name
        assert param.multiple == option.repeatable and param.metavar == option.metavar, name
        assert unset[name] in (None, ()), name  # the defaults live in the table
    assert "config_path" in {p.name for p in command.params}


def test_no_other_click_option_takes_a_run_option_s_flag():
    """A flag written by hand beside the table (with its own help or default) would be a second copy."""
    flags = {o.flag_name for o in OPTIONS}
    for path in (("run",), ("matrix", "run"), ("perf", "calibrate")):
        for param in _command(*path).params:
            if isinstance(param, click.Option) and param.name not in BY_NAME:
                assert not flags & set(param.opts), (path, param.opts)


def test_run_options_has_one_field_per_table_entry_in_order():
    assert [f.name for f in dataclasses.fields(RunOptions)] == [o.name for o in OPTIONS]


def test_the_defaults_resolve_to_the_table_s_defaults_and_help_shows_them():
    options, sources = resolve(None, {}, {})
    assert options.as_json() == {o.name: o.default for o in OPTIONS}
    assert set(sources.values()) == {"default"}
    assert BY_NAME["seed"].full_flag_help == "Seed. [0] [env: GATEKEEPER_SEED]"
    assert BY_NAME["timeout"].full_flag_help.endswith(" [120] [env: GATEKEEPER_TIMEOUT]")
    assert BY_NAME["golden"].full_flag_help.endswith(" [golden_sets/core.yaml] [env: GATEKEEPER_GOLDEN]")


def test_resolved_options_are_frozen_and_typed():
    options, sources = resolve(None, {"GATEKEEPER_TIMEOUT": "30"}, {"seed": "7", "candidate_faults": ("eos-ignored",),
                                                                     "candidate_opts": ("dtype=bf16",)})
    assert (options.seed, options.timeout, options.candidate_faults) == (7, 30.0, ("eos-ignored",))
    assert dict(options.candidate_opts) == {"dtype": "bf16"}
    assert (sources["seed"], sources["timeout"], sources.label("seed"), sources.label("timeout")) == \
        ("flag", "env", "--seed", "GATEKEEPER_TIMEOUT")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1  # type: ignore[misc]
    assert RunOptions.from_values(options.as_json()) == options  # plan.json's round trip (a rejudge)
