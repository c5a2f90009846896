"""`gatekeeper report merge DIR…`: cell runs of one matrix merged into one judgement.

Each DIR is a cell's run directory (its `cell.json` and `summary.json`) or a directory holding
such run directories at any depth (a CI job's downloaded artifacts). Per cell: its axis values,
verdict, per-gate status, the failing checks and the path record (docs/bug-classes.md#path-record).
Across cells: the localisation (`localise.py`: the smallest condition on the axes that separates
failing cells from passing ones), whether each cell met its expected verdict, and the overall verdict under
the combining rule — the worst cell's verdict (a ROLLBACK anywhere rolls back; a cell that could
not be judged, or whose run left no summary, HOLDs), and with expectations given, a cell that
does not meet its expectation HOLDs the merge (the matrix did not behave as it says it must).

Written to OUT: `merged.json`, `summary.md` (a PR comment / job summary), `junit.xml` (one
<testsuite> per cell, one <testcase> per check), `merged.html` (one self-contained page), and each
cell's record as `records/<cell>.yaml`.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gatekeeper import exit_codes
from gatekeeper.errors import ConfigError
from gatekeeper.matrix.localise import Localisation, localise
from gatekeeper.matrix.record import path_record
from gatekeeper.report.atomic import write_atomic
from gatekeeper.report.junit import xml_text
from gatekeeper.results import Verdict

CELL_FILE, SUMMARY_FILE = "cell.json", "summary.json"
RANK = {v.value: v.severity for v in Verdict}
EXIT = exit_codes.FOR_VERDICT  # the one verdict → exit code table


@dataclass
class CellResult:
    """One cell's run as the merge sees it."""

    cell: str
    axes: dict[str, Any]
    expected: str | None
    run_dir: Path
    verdict: str  # PROMOTE / HOLD / ROLLBACK; HOLD when the run left no summary
    gates: dict[str, str] = field(default_factory=dict)  # gate id → status
    failing: list[str] = field(default_factory=list)  # "check: reason" of blocking FAILs and ERRORs
    checks: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    matrix: str = ""
    note: str = ""

    @property
    def met(self) -> bool | None:
        """Whether the verdict is the expected one (None: nothing expected)."""
        return None if self.expected is None else self.verdict == self.expected


def find_cell_dirs(paths: Iterable[Path]) -> list[Path]:
    """Run directories holding a cell.json under `paths` (each a run directory or a tree of them)."""
    found: list[Path] = []
    for p in paths:
        if not p.exists():
            raise ConfigError(f"{p}: no such directory")
        found += sorted({f.parent for f in ([p / CELL_FILE] if (p / CELL_FILE).is_file() else p.rglob(CELL_FILE))})
    return list(dict.fromkeys(found))


def load_cell(run_dir: Path) -> CellResult:
    """A cell's result from its run directory."""
    try:
        meta = json.loads((run_dir / CELL_FILE).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{run_dir / CELL_FILE}: cannot read it: {e}") from None
    out = CellResult(str(meta.get("cell")), dict(meta.get("axes") or {}), meta.get("expected"), run_dir, "HOLD",
                     matrix=str((meta.get("matrix") or {}).get("name") or ""))
    try:
        summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        out.note = "the run left no readable summary.json (it died or was cut short): HOLD"
        return out
    out.verdict = str(summary.get("verdict") or "HOLD")
    for gate in summary.get("gates") or []:
        out.gates[gate["id"]] = gate["status"]
        for c in gate.get("checks") or []:
            out.checks.append(c)
            if c["status"] == "ERROR" or (c["status"] == "FAIL" and c.get("blocking")):
                out.failing.append(f"{c['id']}: {c['status']} — {c['reason'][:200]}")
    out.record = path_record(summary, meta)
    return out


def combined(cells: Sequence[CellResult]) -> tuple[str, list[str]]:
    """The merged verdict and why."""
    if not cells:
        return "HOLD", ["no cell run found"]
    why = []
    worst = max(cells, key=lambda c: RANK.get(c.verdict, 1))
    verdict = worst.verdict if worst.verdict in RANK else "HOLD"
    if verdict != "PROMOTE":
        bad = [c.cell for c in cells if c.verdict == verdict]
        why.append(f"{len(bad)} cell(s) {verdict}: {', '.join(bad)}")
    missed = [c for c in cells if c.met is False]
    if missed:
        why.append("not as expected: " + ", ".join(f"{c.cell} {c.verdict} (expected {c.expected})" for c in missed))
        if verdict == "PROMOTE":
            verdict = "HOLD"
    return verdict, why


def _localisation(cells: Sequence[CellResult]) -> Localisation:
    axes = list(dict.fromkeys(a for c in cells for a in c.axes))
    failed = {c.cell: (True if c.verdict == "ROLLBACK" else False if c.verdict == "PROMOTE" else None) for c in cells}
    return localise({c.cell: c.axes for c in cells}, failed, axes)


def merge(paths: Sequence[Path], out: Path) -> tuple[str, Path]:
    """Merge the cell runs under `paths` into `out`; returns (verdict, out)."""
    cells = [load_cell(d) for d in find_cell_dirs(paths)]
    if not cells:
        raise ConfigError(f"no cell runs (run directories with {CELL_FILE}) under {', '.join(map(str, paths))}")
    names = sorted({c.matrix for c in cells})
    if len(names) > 1:
        raise ConfigError(f"the cell runs come from different matrices ({', '.join(names)}): merge one matrix at a time")
    dupes = sorted({c.cell for c in cells if sum(1 for d in cells if d.cell == c.cell) > 1})
    if dupes:
        raise ConfigError(f"cell(s) run more than once: {', '.join(dupes)} (pass one run directory per cell)")
    verdict, why = combined(cells)
    loc = _localisation(cells)
    (out / "records").mkdir(parents=True, exist_ok=True)
    for c in cells:
        write_atomic(out / "records" / f"{_slug(c.cell)}.yaml", yaml.safe_dump(c.record, sort_keys=False, allow_unicode=True))
    data = {"format": "gatekeeper.merged/1", "matrix": names[0], "verdict": verdict, "exit_code": EXIT[verdict],
            "reasons": why, "localisation": loc.sentence(),
            "cells": [{"cell": c.cell, "axes": c.axes, "verdict": c.verdict, "expected": c.expected, "met": c.met,
                       "gates": c.gates, "failing": c.failing, "run_dir": str(c.run_dir), "note": c.note,
                       "record": c.record} for c in cells]}
    write_atomic(out / "merged.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out / "summary.md", _markdown(data, cells))
    write_atomic(out / "junit.xml", _junit(cells))
    write_atomic(out / "merged.html", _html(data, cells))
    return verdict, out


def _slug(cell: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", cell)[:120] or "cell"


def _gate_ids(cells: Sequence[CellResult]) -> list[str]:
    return list(dict.fromkeys(g for c in cells for g in c.gates))


def _markdown(data: dict[str, Any], cells: Sequence[CellResult]) -> str:
    gates = _gate_ids(cells)
    lines = [f"## gatekeeper matrix `{data['matrix']}`: **{data['verdict']}**", "",
             f"**Localisation:** {data['localisation']}", ""]
    lines += [f"- {r}" for r in data["reasons"]] + ([""] if data["reasons"] else [])
    lines.append("| cell | verdict | expected | " + " | ".join(gates) + " |")
    lines.append("|---|---|---|" + "---|" * len(gates))
    for c in cells:
        mark = "" if c.met is None else (" ✓" if c.met else " ✗")
        lines.append(f"| `{c.cell}` | {c.verdict} | {c.expected or '—'}{mark} | "
                     + " | ".join(c.gates.get(g, "—") for g in gates) + " |")
    failing = [(c.cell, f) for c in cells for f in c.failing[:3]]
    if failing:
        lines += ["", "<details><summary>failing checks</summary>", ""]
        lines += [f"- `{cell}` {f}" for cell, f in failing]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _junit(cells: Sequence[CellResult]) -> str:
    root = ET.Element("testsuites", name="gatekeeper matrix")
    for c in cells:
        suite = ET.SubElement(root, "testsuite", name=xml_text(c.cell), tests=str(max(1, len(c.checks))),
                              failures=str(sum(1 for k in c.checks if k["status"] == "FAIL")),
                              errors=str(sum(1 for k in c.checks if k["status"] == "ERROR") + (0 if c.checks else 1)),
                              skipped=str(sum(1 for k in c.checks if k["status"] == "SKIP")))
        props = ET.SubElement(suite, "properties")
        for name, value in [*c.axes.items(), ("verdict", c.verdict), ("expected", c.expected or "")]:
            ET.SubElement(props, "property", name=xml_text(name), value=xml_text(value))
        if not c.checks:
            case = ET.SubElement(suite, "testcase", classname="gatekeeper.matrix", name="run")
            ET.SubElement(case, "error", message=xml_text(c.note or "no checks"))
        for k in c.checks:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"gatekeeper.{k['id'].split('.')[0]}"),
                                 name=xml_text(k["id"]), time=f"{k.get('duration_s') or 0:.3f}")
            kind = "blocking" if k.get("blocking") else "advisory"
            tag = {"FAIL": "failure", "ERROR": "error", "SKIP": "skipped"}.get(k["status"])
            if tag == "skipped":
                ET.SubElement(case, tag, message=xml_text(k["reason"]))
            elif tag:
                ET.SubElement(case, tag, message=xml_text(k["reason"]), type=kind)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _html(data: dict[str, Any], cells: Sequence[CellResult]) -> str:
    e = html.escape
    gates = _gate_ids(cells)
    colour = {"PROMOTE": "#1a7f37", "HOLD": "#9a6700", "ROLLBACK": "#cf222e", "PASS": "#1a7f37", "WARN": "#9a6700",
              "FAIL": "#cf222e", "ERROR": "#cf222e", "SKIP": "#6e7781"}

    def badge(s: str) -> str:
        return f'<span style="color:{colour.get(s, "#24292f")};font-weight:600">{e(s)}</span>'
    rows = "".join(
        f"<tr><td><code>{e(c.cell)}</code></td>" + "".join(f"<td>{e(str(c.axes.get(a, '')))}</td>" for a in _axes(cells))
        + f"<td>{badge(c.verdict)}</td><td>{e(c.expected or '—')}{'' if c.met is None else (' ✓' if c.met else ' ✗')}</td>"
        + "".join(f"<td>{badge(c.gates.get(g, '—'))}</td>" for g in gates) + "</tr>" for c in cells)
    head = "".join(f"<th>{e(a)}</th>" for a in _axes(cells)) + "<th>verdict</th><th>expected</th>" + \
        "".join(f"<th>{e(g)}</th>" for g in gates)
    failing = "".join(f"<li><code>{e(c.cell)}</code> {e(f)}</li>" for c in cells for f in c.failing[:5])
    records = "".join(f"<details><summary><code>{e(c.cell)}</code> — {e(c.verdict)}</summary>"
                      f"<pre>{e(yaml.safe_dump(c.record, sort_keys=False, allow_unicode=True))}</pre></details>" for c in cells)
    reasons = "".join(f"<li>{e(r)}</li>" for r in data["reasons"])
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>gatekeeper matrix {e(data['matrix'])}</title>
<style>body{{font:14px system-ui,sans-serif;margin:2rem;color:#24292f}}table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left}}th{{background:#f6f8fa}}pre{{background:#f6f8fa;padding:8px}}</style>
</head><body><h1>Matrix <code>{e(data['matrix'])}</code>: {badge(data['verdict'])}</h1>
<p><b>Localisation:</b> {e(data['localisation'])}</p><ul>{reasons}</ul>
<h2>Cells × gates</h2><table><tr><th>cell</th>{head}</tr>{rows}</table>
<h2>Failing checks</h2><ul>{failing or '<li>none</li>'}</ul>
<h2>Execution-path records (seed 002 §7)</h2>{records}</body></html>
"""


def _axes(cells: Sequence[CellResult]) -> list[str]:
    return list(dict.fromkeys(a for c in cells for a in c.axes))
