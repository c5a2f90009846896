"""The performance history (docs/perf-history.md): one JSONL line per run, and the change points
that name the run where a slow drift or a step began.

    {"version": 1, "run_id": "20261201T0900-ab12", "finished_at": "2026-12-01T09:12:44+00:00",
     "label": "vllm 0.9.1 + patch 4411", "baseline": "vllm 0.9.0",
     "metrics": {"c1.output_tokens_per_s": 1012.5, "c8.tpot_p50_s": 0.0213}}

A calibration line (`gatekeeper perf calibrate`, docs/performance.md) has `"kind": "calibration"`,
the `machine` it was measured on and `aa`: per figure, the mean log ratio between two launches of
one build and that mean's sampling variance; its `metrics` are empty. Trends read run lines only.

Runs are kept in the order they were appended; a metric may be missing from some runs and its
trend is then the runs that have it, still numbered by their place in the file (run 1 is the
first line). Change points come from Apache Otava's E-Divisive means, in two passes: the
original E-Divisive with a seeded permutation test says whether and roughly where the level
changed (few false alarms on noisy series), and Otava's Hunter pass (split and merge with
t-tests, which places a change well on short series) says where each confirmed change began, so
a decline of 2-3% a run is named by its first run rather than by its middle.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError, GatekeeperError

FORMAT_VERSION = 1
MIN_RUNS = 9  # fewer: the permutation test cannot reach MAX_PVALUE even for a clean step (2 of C(8,4) orders tie)
MAX_PVALUE = 0.02  # the permutation test's level for a change to be reported (false alarms in ~3% of flat series)
ONSET_PVALUE = 0.05  # the Hunter pass's level for the candidate onsets of a confirmed change
ONSET_MIN_MAGNITUDE = 0.02  # ... and the relative step an onset must mark (smaller ones are noise at 1-2% CV)
SEED = 0  # the permutation test's seed: the same history always gives the same answer
_KEYS = ("version", "run_id", "finished_at", "label", "baseline", "metrics")
HISTORY_FILE = "perf-history.jsonl"


def history_path(setting: str, out_dir: Path | None) -> Path:
    """The policy's history file (`performance.history`), else `perf-history.jsonl` beside the
    run directories."""
    return Path(setting) if setting else (out_dir or Path("reports")) / HISTORY_FILE
_OPTIONAL = ("kind", "machine", "aa", "load")
KINDS = ("run", "calibration")


@dataclass(frozen=True, kw_only=True)
class HistoryEntry:
    """One run's performance figures: flat metric names ("c8.tpot_p50_s") to finite numbers."""

    run_id: str
    finished_at: str
    label: str
    baseline: str
    metrics: dict[str, float] = field(hash=False)
    kind: str = "run"  # "calibration": an A/A launch pair (`aa`), not a run
    machine: str = ""  # the machine class a calibration was measured on (`perf/calibration.py`)
    aa: dict[str, tuple[float, float]] = field(default_factory=dict, hash=False)  # figure -> (mean log ratio, its variance)
    load: float | None = None  # a calibration's: the share of the machine's cores other processes kept busy

    def __post_init__(self) -> None:
        for key in ("run_id", "finished_at", "label", "baseline"):
            if not isinstance(getattr(self, key), str):
                raise ValueError(f"{key} must be a string")
        if not self.run_id:
            raise ValueError("run_id must not be empty")
        if not isinstance(self.metrics, dict):
            raise ValueError("metrics must be an object of metric name to number")
        for name, value in self.metrics.items():
            if not isinstance(name, str) or not name:
                raise ValueError("metrics: a metric name must be a non-empty string")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"metrics.{name} must be a finite number (got {value!r})")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {self.kind!r})")
        if not isinstance(self.machine, str):
            raise ValueError("machine must be a string")
        if self.load is not None and (isinstance(self.load, bool) or not isinstance(self.load, (int, float))
                                      or not 0 <= self.load <= 1):
            raise ValueError(f"load must be a share from 0 to 1 (got {self.load!r})")
        if not isinstance(self.aa, dict):
            raise ValueError("aa must be an object of figure name to {log_ratio, var}")
        for name, pair in self.aa.items():
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)) or pair[1] < 0:
                raise ValueError(f"aa.{name} must have a finite log_ratio and a finite var ≥ 0")

    def to_json(self) -> JsonObject:
        """The entry as a history line (the inverse of `parse_entry`)."""
        out: JsonObject = {"version": FORMAT_VERSION, "run_id": self.run_id, "finished_at": self.finished_at,
                               "label": self.label, "baseline": self.baseline,
                               "metrics": {name: float(value) for name, value in self.metrics.items()}}
        if self.kind != "run":
            out |= {"kind": self.kind, "machine": self.machine,
                    "aa": {k: {"log_ratio": float(r), "var": float(v)} for k, (r, v) in self.aa.items()}}
            if self.load is not None:
                out["load"] = float(self.load)
        return out


def parse_entry(obj: Any) -> HistoryEntry:
    """One decoded history line as an entry; ValueError naming the problem."""
    if not isinstance(obj, dict):
        raise ValueError("a line must be a JSON object")
    unknown = [k for k in obj if k not in _KEYS + _OPTIONAL]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (a line has {', '.join(_KEYS)}; a calibration also "
                         f"{', '.join(_OPTIONAL)})")
    if obj.get("version") != FORMAT_VERSION:
        raise ValueError(f"version {obj.get('version')!r}: this gatekeeper reads history version {FORMAT_VERSION}")
    missing = [k for k in _KEYS if k not in obj]
    if missing:
        raise ValueError(f"missing key {missing[0]!r}")
    aa = obj.get("aa", {})
    if not isinstance(aa, dict) or not all(isinstance(v, dict) and set(v) == {"log_ratio", "var"} for v in aa.values()):
        raise ValueError("aa must be an object of figure name to {\"log_ratio\": number, \"var\": number}")
    return HistoryEntry(run_id=obj["run_id"], finished_at=obj["finished_at"], label=obj["label"], baseline=obj["baseline"],
                        metrics=obj["metrics"], kind=obj.get("kind", "run"), machine=obj.get("machine", ""),
                        aa={k: (v["log_ratio"], v["var"]) for k, v in aa.items()}, load=obj.get("load"))


def append_entry(path: Path, entry: HistoryEntry) -> None:
    """Append one run to the history at `path` (its folder is made), durably: one `os.write` of
    the whole line on an O_APPEND descriptor, then fsync, so a crash or a concurrent writer never
    leaves half a line. A file whose last line lacks its newline gets one first."""
    line = (json.dumps(entry.to_json(), allow_nan=False) + "\n").encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and _last_byte(path, size) != b"\n":
            line = b"\n" + line  # a line cut short by some other writer stays one bad line, not two
        written = os.write(fd, line)
        if written != len(line):  # a full disk: take the partial line back rather than leave it
            os.ftruncate(fd, os.fstat(fd).st_size - written)
            raise OSError(f"{path}: short write ({written} of {len(line)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        return handle.read(1)


def load_history(path: Path, kind: str = "run") -> list[HistoryEntry]:
    """Every line of `kind` (runs, or calibrations) in the history at `path`, in file order; []
    when the file does not exist. Blank lines and lines starting with `#` are skipped; a bad line
    raises ConfigError `file:line: problem`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start})", str(path)) from None
    except OSError as e:
        raise ConfigError(f"cannot read the history: {e.strerror or e}", str(path)) from None
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            try:
                obj = json.loads(stripped)
            except ValueError as e:
                raise ValueError(f"not JSON: {e.args[0].split(':')[0]}") from None
            entries.append(parse_entry(obj))
        except ValueError as e:
            raise ConfigError(str(e), str(path), number) from None
    return [e for e in entries if e.kind == kind]


def change_points(values: Sequence[float]) -> list[int]:
    """The 0-based indices where a new regime begins in `values` (none below MIN_RUNS values).

    A change is confirmed by E-Divisive's permutation test (MAX_PVALUE, seeded); its onset is
    the earliest change in the same direction that Otava's Hunter pass finds after the previous
    confirmed change, or the confirmed index when it finds none."""
    series = [float(v) for v in values]
    if len(series) < MIN_RUNS:
        return []
    try:  # imported here: appending a run must not pay for scipy.stats
        from otava.analysis import compute_change_points, compute_change_points_orig  # type: ignore[import-untyped]
    except ImportError as e:
        raise GatekeeperError("change-point detection needs Apache Otava (pip install 'gatekeeper[history]' "
                              f"or apache-otava): {e}") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # t-tests on constant segments divide by zero: p is still right
        confirmed, _ = compute_change_points_orig(series, max_pvalue=MAX_PVALUE, seed=SEED)
        onsets, _ = compute_change_points(series, max_pvalue=ONSET_PVALUE, min_magnitude=ONSET_MIN_MAGNITUDE)
    found = sorted(int(c.index) for c in confirmed)
    out: list[int] = []
    for j, index in enumerate(found):
        previous = found[j - 1] if j else 0
        after = found[j + 1] if j + 1 < len(found) else len(series)
        rising = _mean(series[index:after]) > _mean(series[previous:index])
        earlier = [int(c.index) for c in onsets if previous < c.index <= index
                   and (c.stats.mean_2 > c.stats.mean_1) == rising]
        out.append(min(earlier, default=index))
    return out


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


@dataclass(frozen=True)
class Change:
    """One change point of a metric: the run where the new regime began and the means of the
    segments before and after it."""

    metric: str
    index: int  # into the trend's values
    run: int  # 1-based place of that run in the history file
    run_id: str
    mean_before: float
    mean_after: float

    @property
    def relative_change(self) -> float:
        """(after - before) / before; inf when the mean before was 0."""
        if self.mean_before == 0:
            return math.inf if self.mean_after else 0.0
        return (self.mean_after - self.mean_before) / abs(self.mean_before)

    def describe(self) -> str:
        """The report line, e.g. `-11.7% from run 4 (20261201T0900-ab12): 1000.2 -> 883.1`."""
        return (f"{self.relative_change * 100:+.1f}% from run {self.run} ({self.run_id}): "
                f"{_num(self.mean_before)} -> {_num(self.mean_after)}")

    def to_json(self) -> JsonObject:
        """The change as plain JSON values."""
        return {"index": self.index, "run": self.run, "run_id": self.run_id, "mean_before": self.mean_before,
                "mean_after": self.mean_after, "relative_change": self.relative_change}


def _num(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 100 else f"{x:.1f}"


@dataclass(frozen=True)
class Trend:
    """One metric across the runs that have it: values, change points and the segments between
    them (start, end exclusive, mean), all indexed into `values`."""

    metric: str
    run_ids: tuple[str, ...]
    runs: tuple[int, ...]  # 1-based place of each value's run in the history file
    values: tuple[float, ...]
    change_points: tuple[int, ...]
    segments: tuple[tuple[int, int, float], ...]

    @property
    def num_runs(self) -> int:
        """How many runs have this metric."""
        return len(self.values)

    @property
    def can_detect(self) -> bool:
        """Whether there are enough runs for a change point to be found at all (MIN_RUNS)."""
        return self.num_runs >= MIN_RUNS

    def change_at(self, index: int) -> Change:
        """The change point at `index` (one of `change_points`) with its run and the means of
        the segments either side."""
        k = self.change_points.index(index)
        return Change(self.metric, index, self.runs[index], self.run_ids[index], self.segments[k][2],
                      self.segments[k + 1][2])

    def changes(self) -> list[Change]:
        """Every change point, oldest first."""
        return [self.change_at(i) for i in self.change_points]

    def summary(self) -> str:
        """One line: runs, first and last value, and the change count or why there is none."""
        if not self.values:
            return f"{self.metric}: no run has it"
        head = (f"{self.metric}: {self.num_runs} run{'s' * (self.num_runs != 1)}, first {_num(self.values[0])} "
                f"(run {self.runs[0]}), last {_num(self.values[-1])} (run {self.runs[-1]})")
        if not self.can_detect:
            return f"{head}; change points need at least {MIN_RUNS} runs"
        n = len(self.change_points)
        return f"{head}; " + (f"{n} change point{'s' * (n != 1)}" if n else "no change point")

    def to_json(self) -> JsonObject:
        """The trend as plain JSON values."""
        return {"metric": self.metric, "num_runs": self.num_runs, "can_detect": self.can_detect,
                "points": [{"run": r, "run_id": i, "value": v} for r, i, v in zip(self.runs, self.run_ids, self.values)],
                "change_points": [c.to_json() for c in self.changes()],
                "segments": [{"start": a, "end": b, "mean": m} for a, b, m in self.segments]}


def trend(entries: Sequence[HistoryEntry], metric: str, last: int | None = None) -> Trend:
    """`metric` across the runs in `entries` that have it; with `last`, only the newest `last`
    of those (run numbers still count from the first entry)."""
    points = [(n, e.run_id, float(e.metrics[metric])) for n, e in enumerate(entries, 1) if metric in e.metrics]
    if last is not None:
        points = points[-last:] if last > 0 else []
    values = tuple(v for _, _, v in points)
    cps = tuple(change_points(values))
    bounds = [0, *cps, len(values)]
    segments = tuple((a, b, _mean(values[a:b])) for a, b in zip(bounds, bounds[1:]) if b > a)
    return Trend(metric, tuple(i for _, i, _ in points), tuple(n for n, _, _ in points), values, cps, segments)


def metric_names(entries: Sequence[HistoryEntry]) -> list[str]:
    """Every metric in `entries`, in the order they first appear."""
    return list(dict.fromkeys(name for e in entries for name in e.metrics))


def trends(entries: Sequence[HistoryEntry], last: int | None = None) -> list[Trend]:
    """The trend of every metric present (see `trend`)."""
    return [trend(entries, name, last) for name in metric_names(entries)]
