"""The view of correctness.html, from the parts of the run's report data the page shows.

In reading order: the header (header.py), what changed between the builds (what_changed.py), the
correctness table (table.py), the key charts of the correctness gates, their failures, then every
correctness gate with its checks (gate_view.py). The performance gate has its own page
(performance/view.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gatekeeper.gates.performance.checks import GATE as PERFORMANCE_GATE
from gatekeeper.report.correctness.table import CorrectnessRow
from gatekeeper.report.correctness.what_changed import what_changed
from gatekeeper.report.gate_view import failures, gate_view
from gatekeeper.report.header import RunView
from gatekeeper.report.key_charts import key_charts
from gatekeeper.report.statuses import StatusCounts
from gatekeeper.results import GateResult, RunResult


def correctness_view(header: RunView, run: RunResult, gates: Sequence[tuple[GateResult, StatusCounts]],
                     table: tuple[CorrectnessRow, ...]) -> dict[str, Any]:
    """Everything correctness.html.j2 needs: `header` on top, then `run`'s correctness gates
    (`gates`: each gate of the run with its checks counted by status) and the correctness `table`."""
    shown = tuple(g for g in run.gates if g.id != PERFORMANCE_GATE)
    return {"run": header, "changed": what_changed(run), "table": table,
            "key_charts": key_charts(shown),
            "failures": failures(shown),
            "gates": tuple(gate_view(g, counts) for g, counts in gates if g.id != PERFORMANCE_GATE)}
