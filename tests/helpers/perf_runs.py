"""The one real ROLLBACK at the performance gate the serial tests share (through `shared_run`):
the candidate taking twice as long to decode (decode-slowdown=100), against its own launch
without the fault, under the small policy in policies/perf-small.yaml. The performance gate's
test asserts its figures, the real-browser test its pages: one run of about two minutes, alone
on the machine, instead of two."""

from __future__ import annotations

from paths import TESTS

SMALL_POLICY = TESTS / "helpers" / "policies" / "perf-small.yaml"
SLOWED_RUN = ("--gates", "performance", "--policy", str(SMALL_POLICY), "--candidate-fault", "decode-slowdown=100")
