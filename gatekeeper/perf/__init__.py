"""Performance measurement, the performance gate's library (`gatekeeper perf calibrate` measures
with it too): the load generator, the interleaved block measurement (`measure.py`), the workload
and its choice, its figures, the A/B comparison, calibration and the history of runs."""
