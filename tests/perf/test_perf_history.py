"""The performance history: the store keeps whole lines and names bad ones by file:line; a
throughput decline of 2.5% a run from run 4 is named at run 4 (±1); flat noisy histories give
no change point; `gatekeeper perf history` prints it all and never a traceback.

The synthetic series use Python's `random.Random(seed).gauss`, so every test is deterministic.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.perf.history import (
    MIN_RUNS,
    HistoryEntry,
    append_entry,
    change_points,
    load_history,
    trend,
    trends,
)
from paths import ROOT

METRIC = "c1.output_tokens_per_s"


def declining(seed: int, cv: float = 0.005, n: int = 10) -> list[float]:
    """Runs 1-3 flat at 1000 tok/s; from run 4 on, 2.5% lower each run, compounded (run 4 is
    975, run 5 950.6, ... run 10 837.6); each times (1 + gaussian noise of `cv`)."""
    rng = random.Random(seed)
    return [(1000.0 if run < 4 else 1000.0 * 0.975 ** (run - 3)) * (1 + rng.gauss(0, cv)) for run in range(1, n + 1)]


def flat(seed: int, cv: float) -> list[float]:
    """10-30 runs of 1000 tok/s times (1 + gaussian noise of `cv`): no change at all."""
    rng = random.Random(1000 + seed)
    return [1000.0 * (1 + rng.gauss(0, cv)) for _ in range(rng.randint(10, 30))]


def entry(run: int, metrics: dict[str, float]) -> HistoryEntry:
    return HistoryEntry(run_id=f"20261201T{run:02d}00-r{run:02d}", finished_at=f"2026-12-{run:02d}T09:00:00+00:00",
                        label="candidate vllm 0.9.1", baseline="vllm 0.9.0", metrics=metrics)


def write_history(path: Path, values: list[float]) -> list[HistoryEntry]:
    entries = [entry(run, {METRIC: v, "c8.tpot_p50_s": 0.021}) for run, v in enumerate(values, 1)]
    for e in entries:
        append_entry(path, e)
    return entries


def gatekeeper(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)


REPORT_LINE = re.compile(r"^-(\d+\.\d)% from run (\d+) \((\S+)\): (\d+\.\d) -> (\d+\.\d)$")


def test_a_decline_of_2_5_percent_a_run_from_run_4_is_named_at_run_4_within_one(tmp_path):
    path = tmp_path / "history.jsonl"
    entries = write_history(path, declining(seed=0))
    t = trend(load_history(path), METRIC)
    assert t.num_runs == 10 and t.can_detect
    assert t.change_points and t.change_points[0] in (2, 3, 4), t.change_points  # run 4 ±1, as 0-based indices
    first = t.changes()[0]
    assert first.run == first.index + 1 and first.run_id == entries[first.index].run_id
    assert first.mean_before == pytest.approx(1000, rel=0.01) and first.relative_change < -0.05
    line = first.describe()
    m = REPORT_LINE.match(line)
    assert m, line
    assert m.group(2) == str(first.run) and m.group(3) == first.run_id
    assert float(m.group(1)) == pytest.approx(-100 * first.relative_change, abs=0.05)
    assert line == "-10.3% from run 5 (20261201T0500-r05): 992.8 -> 891.0"  # seed 0's gold line


def test_the_run_4_decline_is_found_for_most_noise_seeds():
    """Not one lucky seed: over 20 seeds at 0.5% noise, run 4 ±1 in at least 17 (measured: 20 here,
    907 in 1,000 seeds; docs/perf-history.md has the figures)."""
    found = []
    for seed in range(20):
        cps = change_points(declining(seed))
        found.append(cps[0] + 1 if cps else None)
    assert sum(1 for run in found if run is not None and abs(run - 4) <= 1) >= 17, found
    assert all(run is not None for run in found), found  # a 16% drift is never missed


def test_a_step_is_named_at_its_run():
    rng = random.Random(7)
    values = [1000.0 * (0.95 if run >= 6 else 1.0) * (1 + rng.gauss(0, 0.01)) for run in range(1, 11)]
    assert change_points(values) == [5]  # run 6, the first at -5%


def test_a_flat_noisy_series_has_no_change_point():
    values = flat(seed=0, cv=0.015)
    assert change_points(values) == []
    entries = [entry(run, {METRIC: v}) for run, v in enumerate(values, 1)]
    t = trend(entries, METRIC)
    assert t.change_points == () and t.segments == ((0, len(values), pytest.approx(sum(values) / len(values))),)
    assert t.summary().endswith("; no change point")


def test_flat_noisy_series_rarely_raise_a_false_change_point():
    """100 flat series of 10-30 runs at 1% noise: a false change point in at most 8 (measured: 7
    here, 35 in 1,000 seeds; the answer does not depend on the noise's size, only its shape)."""
    found = {seed: change_points(flat(seed, 0.01)) for seed in range(100)}
    assert sum(1 for cps in found.values() if cps) <= 8, {s: c for s, c in found.items() if c}
    assert change_points([x * 2 for x in flat(8, 0.01)]) == change_points(flat(8, 0.01))  # scale-free


def test_fewer_than_min_runs_find_nothing_and_say_so():
    t = trend([entry(run, {METRIC: v}) for run, v in enumerate([1000.0, 500.0, 250.0], 1)], METRIC)
    assert t.change_points == () and not t.can_detect
    assert t.summary() == (f"{METRIC}: 3 runs, first 1000.0 (run 1), last 250.0 (run 3); "
                           f"change points need at least {MIN_RUNS} runs")


def test_append_and_load_round_trip_and_missing_metrics_keep_file_numbering(tmp_path):
    path = tmp_path / "deep" / "er" / "history.jsonl"  # parent folders are made
    entries = [entry(run, {METRIC: 1000.0 + run} if run % 2 else {METRIC: 1000.0 + run, "c8.ttft_p95_s": 0.3})
               for run in range(1, 6)]
    for e in entries:
        append_entry(path, e)
    assert load_history(path) == entries
    assert all(json.loads(line)["version"] == 1 for line in path.read_text().splitlines())
    by_metric = {t.metric: t for t in trends(load_history(path))}
    assert list(by_metric) == [METRIC, "c8.ttft_p95_s"]
    assert by_metric["c8.ttft_p95_s"].runs == (2, 4) and by_metric["c8.ttft_p95_s"].run_ids == (entries[1].run_id,
                                                                                              entries[3].run_id)
    assert trend(entries, METRIC, last=2).runs == (4, 5)


def test_append_after_a_cut_line_starts_a_new_line(tmp_path):
    path = tmp_path / "history.jsonl"
    append_entry(path, entry(1, {METRIC: 1.0}))
    with open(path, "a") as handle:
        handle.write('{"version": 1, "run_id": "cut sho')  # a writer that died mid-line
    append_entry(path, entry(3, {METRIC: 3.0}))
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["run_id"] == entry(3, {}).run_id
    with pytest.raises(ConfigError, match=r":2: not JSON"):
        load_history(path)


def test_a_missing_file_is_an_empty_history(tmp_path):
    assert load_history(tmp_path / "none.jsonl") == []
    assert trends([]) == []


GOOD = entry(1, {METRIC: 1000.0}).to_json()


@pytest.mark.parametrize("line, problem", [
    ("{not json", "not JSON"),
    ("[1, 2]", "a line must be a JSON object"),
    (json.dumps({**GOOD, "run": 3}), "unknown key 'run'"),
    (json.dumps({**GOOD, "version": 2}), "version 2: this gatekeeper reads history version 1"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "baseline"}), "missing key 'baseline'"),
    (json.dumps({**GOOD, "run_id": 7}), "run_id must be a string"),
    (json.dumps({**GOOD, "metrics": [1.0]}), "metrics must be an object"),
    (json.dumps({**GOOD, "metrics": {METRIC: "fast"}}), f"metrics.{METRIC} must be a finite number"),
    (json.dumps({**GOOD, "metrics": {METRIC: True}}), f"metrics.{METRIC} must be a finite number"),
    (json.dumps({**GOOD, "metrics": {METRIC: float("nan")}}), f"metrics.{METRIC} must be a finite number"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path, line, problem):
    path = tmp_path / "history.jsonl"
    path.write_text("# a comment\n" + json.dumps(GOOD) + "\n\n" + line + "\n")
    with pytest.raises(ConfigError) as e:
        load_history(path)
    assert str(e.value).startswith(f"{path}:4: ") and problem in str(e.value), str(e.value)


def test_cli_prints_each_metric_and_the_change_point(tmp_path):
    path = tmp_path / "history.jsonl"
    write_history(path, declining(seed=0))
    r = gatekeeper("perf", "history", str(path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{path}: 10 runs, 2 metrics"
    assert lines[1] == f"{METRIC}: 10 runs, first 1004.7 (run 1), last 838.4 (run 10); 1 change point"
    assert lines[2] == "  -10.3% from run 5 (20261201T0500-r05): 992.8 -> 891.0"
    assert lines[3] == "c8.tpot_p50_s: 10 runs, first 0.021 (run 1), last 0.021 (run 10); no change point"
    assert "Traceback" not in r.stderr

    r = gatekeeper("perf", "history", str(path), "--metric", METRIC, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [t["metric"] for t in data["trends"]] == [METRIC] and data["num_runs"] == 10
    (change,) = data["trends"][0]["change_points"]
    assert change["run"] == 5 and change["run_id"] == "20261201T0500-r05" and change["relative_change"] < -0.09


def test_cli_says_clearly_when_there_is_nothing_to_show(tmp_path):
    r = gatekeeper("perf", "history", str(tmp_path / "none.jsonl"))
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.strip() == f"gatekeeper: error: {tmp_path / 'none.jsonl'}: no such history file " \
                               "(the performance gate appends a run to it)"

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = gatekeeper("perf", "history", str(empty))
    assert r.returncode == 0 and r.stdout.strip() == f"{empty}: no runs recorded yet (the file is empty)"

    short = tmp_path / "short.jsonl"
    write_history(short, [1000.0, 990.0])
    r = gatekeeper("perf", "history", str(short))
    assert r.returncode == 0 and f"change points need at least {MIN_RUNS} runs" in r.stdout


def test_cli_bad_line_and_unknown_metric_exit_3_with_one_line(tmp_path):
    path = tmp_path / "history.jsonl"
    write_history(path, [1000.0, 990.0])
    with open(path, "a") as handle:
        handle.write('{"version": 1}\n')
    r = gatekeeper("perf", "history", str(path))
    assert r.returncode == 3 and r.stderr == f"gatekeeper: error: {path}:3: missing key 'run_id'\n"

    path.write_text(path.read_text().splitlines()[0] + "\n")
    r = gatekeeper("perf", "history", str(path), "--metric", "c1.output_tokens_per")
    assert r.returncode == 3 and "did you mean 'c1.output_tokens_per_s'?" in r.stderr and "Traceback" not in r.stderr
