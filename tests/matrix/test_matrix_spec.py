"""Matrix files: the cells a file spans (axes, exclude, include), its templates filled per cell,
its policy fragments and expectations, the shipped matrices, and every validation error as one
line naming the file, the line and the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from gatekeeper.config.policy import load_policy
from gatekeeper.errors import ConfigError
from gatekeeper.gates.registry import settings_types
from gatekeeper.matrix.cell_run import write_policy
from gatekeeper.matrix.spec import load_matrix
from gatekeeper.matrix.template import TemplateError, fill, placeholders
from gatekeeper.targets.spec import parse_target
from paths import ROOT


BASE = """\
version: 1
name: m
axes:
  dtype: [float32, bfloat16]
  tp: [1, 2]
candidate:
  target: bundled:optimized
  opts: {dtype: "{dtype}", tp: "{tp}"}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def ids(path: str) -> list[str]:
    return [c.id for c in load_matrix(path).cells]


def test_the_cells_are_the_product_of_the_axes_in_order_last_axis_fastest(tmp_path):
    m = load_matrix(write(tmp_path, BASE))
    assert [c.id for c in m.cells] == ["dtype=float32,tp=1", "dtype=float32,tp=2", "dtype=bfloat16,tp=1", "dtype=bfloat16,tp=2"]
    assert m.axes == (("dtype", ("float32", "bfloat16")), ("tp", ("1", "2")))
    cell = m.cell("dtype=bfloat16,tp=2")
    assert cell.target == {"kind": "bundled", "profile": "optimized", "options": {"dtype": "bfloat16", "tp": "2"}}
    assert dict(cell.declared) == {"dtype": "bfloat16", "tp": "2"}
    assert cell.policy is None and m.expected(cell, []) is None
    assert len(m.sha256) == 64 and m.sha256 == load_matrix(m.path).sha256


def test_exclude_removes_matching_cells_and_include_adds_cells_with_new_values(tmp_path):
    path = write(tmp_path, BASE + textwrap.dedent("""\
        exclude:
          - {dtype: float32, tp: [1, 2]}
          - {tp: 2}
        include:
          - {dtype: bfloat16, tp: 4}
          - {tp: 2, dtype: float32}
        """))
    # float32 is excluded at both tp; bf16 tp=2 too; the includes come after, each in axis order.
    assert ids(path) == ["dtype=bfloat16,tp=1", "dtype=bfloat16,tp=4", "dtype=float32,tp=2"]
    assert load_matrix(path).axes[1] == ("tp", ("1", "2", "4"))


def test_booleans_read_on_off_in_ids_and_fill_templates_as_true_false(tmp_path):
    path = write(tmp_path, """\
        version: 1
        axes:
          fused_norm: [off, on]
          prefix_caching: [yes]
        candidate:
          target: bundled
          opts: {fused_norm: "{fused_norm}", prefix_caching: "{prefix_caching}", max_num_seqs: 8}
        """)
    m = load_matrix(path)
    assert m.name == "m"  # the file's stem when no name is given
    assert [c.id for c in m.cells] == ["fused_norm=off,prefix_caching=on", "fused_norm=on,prefix_caching=on"]
    cell = m.cells[1]
    assert cell.target["options"] == {"fused_norm": "true", "prefix_caching": "true", "max_num_seqs": "8"}
    assert dict(cell.declared) == {"label.fused_norm": "on", "label.prefix_caching": "on"}
    # what a run makes of it: the target the run config would give
    spec = parse_target(cell.target, "candidate")
    assert spec.engine_options == (("fused_norm", "true"), ("prefix_caching", "true"), ("max_num_seqs", "8"))


def test_a_launch_template_keeps_the_launch_placeholders_and_fill_tables_choose_text(tmp_path):
    path = write(tmp_path, """\
        version: 1
        axes:
          tp: [1, 4]
          eager: [off, on]
          backend: [FLASH_ATTN]
        candidate:
          launch: "serve {model} --port {port} --key {api_key} -tp {tp} {eager} --cfg '{{\\"a\\": 1}}'"
          env: {BACKEND: "{backend}", LITERAL: "{{x}}"}
          fill: {eager: {off: "", on: --enforce-eager}}
          ready_timeout_s: 900
        """)
    cell = load_matrix(path).cell("tp=4,eager=on,backend=FLASH_ATTN")
    assert cell.target == {"kind": "launch", "ready_timeout_s": 900.0, "env": {"BACKEND": "FLASH_ATTN", "LITERAL": "{x}"},
                           "command": "serve {model} --port {port} --key {api_key} -tp 4 --enforce-eager --cfg '{{\"a\": 1}}'"}
    # the launch formats the command once more: its own placeholders filled, the braces single again
    assert cell.target["command"].format(port=8000, model="m", api_key="k") == \
        "serve m --port 8000 --key k -tp 4 --enforce-eager --cfg '{\"a\": 1}'"
    assert load_matrix(path).cell("tp=1,eager=off,backend=FLASH_ATTN").target["command"].startswith(
        "serve {model} --port {port} --key {api_key} -tp 1  --cfg")


def test_template_filling_rules():
    assert placeholders("a {x} {{y}} { z }") == ["x", "z"]
    assert fill("{x}-{{lit}}", {"x": "{v}"}) == "{v}-{lit}"
    assert fill("{x}-{{lit}}-{port}", {"x": "{v}"}, launch=True) == "{{v}}-{{lit}}-{port}"
    with pytest.raises(TemplateError, match="lone"):
        placeholders("{x")


def test_policy_fragments_merge_in_order_over_the_runs_policy(tmp_path):
    path = write(tmp_path, BASE + textwrap.dedent("""\
        policy:
          - when: {tp: 2}
            gates: {golden: {cases: [canary-ok]}, numerics: {max_new_tokens: 8}}
            checks: [{match: "golden.*", blocking: false}]
          - when: {dtype: bfloat16, tp: 2}
            gates: {numerics: {max_new_tokens: 4}}
        """))
    m = load_matrix(path)
    assert m.cell("dtype=float32,tp=1").policy is None
    assert m.cell("dtype=float32,tp=2").policy == {"gates": {"golden": {"cases": ["canary-ok"]}, "numerics": {"max_new_tokens": 8}},
                                                   "checks": [{"match": "golden.*", "blocking": False}]}
    cell = m.cell("dtype=bfloat16,tp=2")
    assert cell.policy["gates"]["numerics"] == {"max_new_tokens": 4}  # the later rule wins
    merged = write_policy(tmp_path / "run", "gates/smoke.yaml", m, cell)
    policy = load_policy(merged, settings_types())
    assert policy.settings("golden").cases == ["canary-ok"]
    assert policy.settings("numerics").max_new_tokens == 4
    assert policy.settings("numerics").prompts == load_policy(ROOT / "gates/smoke.yaml", settings_types()).settings("numerics").prompts
    assert not policy.is_blocking("golden.pass_rate")  # the fragment's rule comes first
    assert yaml.safe_load(merged.read_text())["name"] == "smoke+m"


def test_expectations_first_applying_rule_by_cell_and_by_the_runs_faults(tmp_path):
    path = write(tmp_path, BASE + textwrap.dedent("""\
        expect:
          - {faults: [fused-norm-dtype], when: {dtype: bfloat16, tp: 2}, verdict: ROLLBACK}
          - {faults: [fused-norm-dtype], verdict: promote}
          - {faults: [], verdict: PROMOTE}
        """))
    m = load_matrix(path)
    bf16_tp2, fp32 = m.cell("dtype=bfloat16,tp=2"), m.cell("dtype=float32,tp=1")
    assert m.expected(bf16_tp2, ["fused-norm-dtype"]) == "ROLLBACK"
    assert m.expected(fp32, ["fused-norm-dtype"]) == "PROMOTE"
    assert m.expected(bf16_tp2, []) == "PROMOTE"
    assert m.expected(bf16_tp2, ["decode-slowdown=5"]) is None  # no rule for that run
    assert m.expected(bf16_tp2, ["fused-norm-dtype", "eos-ignored"]) is None  # faults must be exactly those named


def test_the_shipped_bundled_matrix(tmp_path):
    m = load_matrix("matrices/bundled.yaml")
    assert len(m.cells) == 16 and [a for a, _ in m.axes] == ["dtype", "tp", "fused_norm", "prefix_caching"]
    faulted = [c.id for c in m.cells if m.expected(c, ["fused-norm-dtype"]) == "ROLLBACK"]
    assert faulted == ["dtype=bfloat16,tp=2,fused_norm=on,prefix_caching=on", "dtype=bfloat16,tp=2,fused_norm=on,prefix_caching=off"]
    assert all(m.expected(c, ["fused-norm-dtype"]) == "PROMOTE" for c in m.cells if c.id not in faulted)
    assert all(m.expected(c, []) == "PROMOTE" for c in m.cells)
    cell = m.cell(faulted[0])
    assert cell.target["options"] == {"dtype": "bfloat16", "tp": "2", "fused_norm": "true", "prefix_caching": "true"}


def test_the_vllm_example_validates(tmp_path):
    m = load_matrix(ROOT / "matrices" / "vllm-example.yaml")
    assert len(m.cells) == 25  # 32 combinations, 8 excluded, 1 included
    assert not m.expectations
    cell = m.cell("hardware=H100,tp=4,dtype=bfloat16,quantization=fp8,enforce_eager=on,attention_backend=FLASHINFER,"
                  "kv_cache_dtype=auto")
    assert cell.target["kind"] == "launch" and cell.target["env"] == {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert "--tensor-parallel-size 4 --dtype bfloat16 --kv-cache-dtype auto --quantization fp8 --enforce-eager" \
        in cell.target["command"]
    assert "{model}" in cell.target["command"] and "{port}" in cell.target["command"]
    assert dict(cell.declared)["quantization"] == "fp8" and dict(cell.declared)["label.attention_backend"] == "FLASHINFER"
    assert cell.policy == {"gates": {"numerics": {"noise_multiplier": 3.0}, "performance": {"enabled": False}}}
    assert m.cells[-1].id.endswith("kv_cache_dtype=fp8")  # the include


def test_the_vllm_cpu_matrix_and_its_reference_config_validate():
    """matrices/vllm-cpu.yaml (run here by scripts/vllm_cpu.sh) and the run config that names its reference."""
    from gatekeeper.config.run_config import resolve

    m = load_matrix(ROOT / "matrices" / "vllm-cpu.yaml")
    assert [c.id for c in m.cells] == ["version=0.30.0", "version=0.31.0", "version=0.32.0"]
    assert all(m.expected(c, []) == "PROMOTE" for c in m.cells)
    cell = m.cell("version=0.32.0")
    assert cell.target["kind"] == "launch" and cell.target["command"] == "bash scripts/vllm_cpu.sh 0.32.0 --port {port}"
    options, _ = resolve(str(ROOT / "matrices" / "vllm-cpu-reference.yaml"), {}, {})
    reference = parse_target(options.reference, "reference")
    assert options.served_model == "gk-tiny"
    assert reference.kind == "launch" and reference.command == "bash scripts/vllm_cpu.sh 0.31.0 --port {port}"


def test_an_unknown_cell_names_the_nearest(tmp_path):
    m = load_matrix(write(tmp_path, BASE))
    with pytest.raises(ConfigError) as e:
        m.cell("dtype=bfloat16,tp=3")
    assert "has no cell 'dtype=bfloat16,tp=3'" in str(e.value) and e.value.hint == "did you mean dtype=bfloat16,tp=2?"


def _replace(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


# (file text, line, key, part of the message): each error is `FILE:LINE: KEY: MESSAGE`.
ERRORS = [
    (BASE + "axis: {}\n", 9, "axis", "unknown key"),
    (BASE.replace("version: 1", "version: 2"), 1, "version", "unsupported matrix version"),
    (BASE.replace("name: m", "name: a/b"), 2, "name", "letters, digits"),
    (_replace("  dtype: [float32, bfloat16]\n  tp: [1, 2]\n", ""), 3, "axes", "non-empty mapping"),
    (_replace("tp: [1, 2]", "tp: 2"), 5, "axes.tp", "non-empty list"),
    (_replace("tp: [1, 2]", "tp: []"), 5, "axes.tp", "non-empty list"),
    (_replace("tp: [1, 2]", "tp:\n    - 1\n    - 1"), 7, "axes.tp[1]", "listed twice"),
    (_replace("tp: [1, 2]", "tp: [{a: 1}]"), 5, "axes.tp[0]", "plain value"),
    (_replace("tp: [1, 2]", 'tp: ["a b"]'), 5, "axes.tp[0]", "letters, digits"),
    (_replace("tp: [1, 2]", "tp: [1, 2]\n  model: [a]"), 6, "axes.model", "launch placeholder"),
    (_replace("tp: [1, 2]", "tp: [1, 2]\n  cell: [a]"), 6, "axes.cell", "cannot be an axis"),
    (_replace("tp: [1, 2]", "tp: [1, 2]\n  Tp: [a]"), 6, "axes.Tp", "lower-case"),
    (_replace("dtype: [float32, bfloat16]", "dtype: [float32, bf17]"), 4, "axes.dtype[1]", "is not a dtype"),
    (_replace("tp: [1, 2]", "tp: [0, 2]"), 5, "axes.tp[0]", "positive integer"),
    (_replace('tp: "{tp}"', 'tp: "{tpp}"'), 8, "candidate.opts.tp", "{tpp} names no axis (axes: dtype, tp)"),
    (_replace('tp: "{tp}"', 'tp: "{tp"'), 8, "candidate.opts.tp", "a lone '{'"),
    (_replace('tp: "{tp}"', 'tp: "{port}"'), 8, "candidate.opts.tp", "{port} names no axis"),
    (_replace("  opts: {", "  env: {X: a}\n  opts: {"), 8, "candidate.env", "unknown key for a bundled candidate"),
    (_replace("target: bundled:optimized", "target: http://x:8000"), 7, "candidate.target", "must be bundled"),
    (_replace("target: bundled:optimized", "target: bundled:fast"), 7, "candidate.target", "must be bundled"),
    (_replace("  target: bundled:optimized\n", "  launch: x\n  target: bundled\n"), 6, "candidate", "exactly one of"),
    (_replace("  target: bundled:optimized\n  opts: {dtype: \"{dtype}\", tp: \"{tp}\"}\n", "  launch: serve -tp {tp}\n"), 7,
     "candidate.launch", "containing {port}"),
    (_replace("  target: bundled:optimized\n  opts: {dtype: \"{dtype}\", tp: \"{tp}\"}\n",
              "  launch: serve --port {port} -tp {tp} --x {nope}\n"), 7, "candidate.launch", "{nope} names no axis"),
    (_replace("  target: bundled:optimized\n  opts: {dtype: \"{dtype}\", tp: \"{tp}\"}\n",
              "  launch: serve --port {port} {tp}\n  fill: {tp: {1: a}}\n"), 8, "candidate.fill.tp", "gives no text for 2"),
    (_replace("  target: bundled:optimized\n  opts: {dtype: \"{dtype}\", tp: \"{tp}\"}\n",
              "  launch: serve --port {port}\n  fill: {pp: {1: a}}\n"), 8, "candidate.fill.pp", "no such axis"),
    (_replace("candidate:\n  target: bundled:optimized\n  opts: {dtype: \"{dtype}\", tp: \"{tp}\"}\n", ""), 1, "candidate",
     "needs a candidate template"),
    (BASE + "exclude:\n  - {dtype: float32, pp: 2}\n", 10, "exclude[0].pp", "no such axis (axes: dtype, tp)"),
    (BASE + "exclude:\n  - {tp: 3}\n", 10, "exclude[0].tp", "'3' is not a value of axis tp (values: 1, 2)"),
    (BASE + "exclude: {tp: 1}\n", 9, "exclude", "must be a list"),
    (BASE + "exclude:\n  - {tp: [1, 2]}\n", 9, "exclude", "excludes every cell"),
    (BASE + "include:\n  - {tp: 4}\n", 10, "include[0]", "gives no value for dtype"),
    (BASE + "include:\n  - {tp: 4, dtype: float32, pp: 1}\n", 10, "include[0].pp", "no such axis"),
    (BASE + "include:\n  - {tp: 2, dtype: float32}\n", 10, "include[0]", "duplicate cell dtype=float32,tp=2 (the axes give it)"),
    (BASE + "include:\n  - {tp: 4, dtype: float32}\n  - {tp: 4, dtype: float32}\n", 11, "include[1]",
     "duplicate cell dtype=float32,tp=4 (include[0] at line 10 gives it)"),
    (BASE + "include:\n  - {tp: 4, dtype: fp33}\n", 10, "include[0].dtype", "is not a dtype"),
    (BASE + "policy:\n  - {when: {tp: 2}, gate: {}}\n", 10, "policy[0].gate", "unknown key (known: when, gates, checks)"),
    (BASE + "policy:\n  - {when: {tp: 2}}\n", 10, "policy[0]", "sets nothing"),
    (BASE + "policy:\n  - when: {pp: 2}\n    gates: {}\n", 10, "policy[0].when.pp", "no such axis"),
    (BASE + "policy:\n  - gates:\n      nosuch: {}\n", 11, "policy[0].gates.nosuch", "unknown gate"),
    (BASE + "policy:\n  - gates:\n      golden:\n        casez: [a]\n", 12, "policy[0].gates.golden.casez", "unknown setting"),
    (BASE + "policy:\n  - gates:\n      numerics:\n        max_new_tokens: many\n", 12, "policy[0].gates.numerics.max_new_tokens",
     "must be an integer"),
    (BASE + "policy:\n  - checks: [{match: x}]\n", 10, "policy[0].checks[0]", "each rule is"),
    (BASE + "expect:\n  - {verdict: PASS}\n", 10, "expect[0].verdict", "must be one of PROMOTE, HOLD, ROLLBACK"),
    (BASE + "expect:\n  - {verdict: HOLD, fault: [x]}\n", 10, "expect[0].fault", "unknown key"),
    (BASE + "expect:\n  - {verdict: HOLD, faults: x}\n", 10, "expect[0].faults", "list of fault names"),
    (BASE + "expect:\n  - {verdict: HOLD, when: {tp: 9}}\n", 10, "expect[0].when.tp", "not a value of axis tp"),
    (BASE + "expect: {verdict: HOLD}\n", 9, "expect", "must be a list"),
    (BASE + "axes: {}\n", 9, None, "duplicate key 'axes'"),
    (BASE + "  bad: [\n", 10, None, ""),
]


@pytest.mark.parametrize("text,line,key,message", ERRORS, ids=[f"{k or 'yaml'}-{n}" for n, (_, _, k, _) in enumerate(ERRORS)])
def test_every_error_is_one_line_naming_file_line_and_key(tmp_path, text, line, key, message):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_matrix(path)
    error = str(e.value)
    assert "\n" not in error
    assert error.startswith(f"{path}:{line}: " + (f"{key}: " if key else "")), error
    assert message in error, error
