"""summary.md of a merged matrix: the merged verdict for a PR comment or a CI job summary.

The verdict line, the localisation sentence, the reasons, one table row per cell (its verdict,
whether it met its expectation: ✓ / ✗, and each gate's status), then the first three failing
checks of each cell folded under `<details>`.
"""

from __future__ import annotations

from gatekeeper.report.matrix.data import MergedMatrix

MAX_FAILING_PER_CELL = 3


def matrix_markdown(m: MergedMatrix) -> str:
    """summary.md's text."""
    gates = m.gate_ids
    lines = [f"## gatekeeper matrix `{m.matrix}`: **{m.verdict.value}**", "", f"**Localisation:** {m.localisation}", ""]
    lines += [f"- {r}" for r in m.reasons] + ([""] if m.reasons else [])
    lines.append("| cell | verdict | expected | " + " | ".join(gates) + " |")
    lines.append("|---|---|---|" + "---|" * len(gates))
    for c in m.cells:
        lines.append(f"| `{c.cell}` | {c.verdict.value} | {c.expectation} | "
                     + " | ".join(c.gates.get(g, "—") for g in gates) + " |")
    failing = [(c.cell, f) for c in m.cells for f in c.failing[:MAX_FAILING_PER_CELL]]
    if failing:
        lines += ["", "<details><summary>failing checks</summary>", ""]
        lines += [f"- `{cell}` {f}" for cell, f in failing]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
