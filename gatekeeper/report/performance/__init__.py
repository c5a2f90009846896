"""performance.html's own pieces: the performance summary as observed during the gates
(summary.py), the performance gate's table from its findings (gate_table.py), the gate's own
reasons for the verdict box (reasons.py) and the page's view (view.py). summary.md and
summary.json show the summary and the gate's table too (run/)."""
