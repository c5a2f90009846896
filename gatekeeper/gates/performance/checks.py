"""The performance gate's checks that other code reads (performance.html's table, the
correctness report that leaves this gate out): the gate id and its summary checks' ids. A
literal `performance.…` check id outside this package is a test failure
(tests/repo/test_architecture.py)."""

from __future__ import annotations

GATE = "performance"
MEASUREMENT = f"{GATE}.measurement"  # how the load was run: pairs, the baseline, per-level figures
CAPACITY = f"{GATE}.capacity"  # the knee of each side's latency curve and the cost per 1,000 requests
PRIMARY = f"{GATE}.primary"  # the pre-registered decode figure, decided at the materiality in launch rounds
