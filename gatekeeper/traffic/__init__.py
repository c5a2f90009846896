"""Gate 5's library, shared by the gate (`gatekeeper/gates/shadow/`, replaying recorded traffic)
and the live shadow proxy (`gatekeeper/live/`, mirroring it), neither importing the other:

- recorded traffic: `format.py` (the JSONL format gate 5 replays, docs/traffic-format.md),
  `importers.py` (from formats users already have), `sample.py` (the shipped sample's generator);
- answers and pairs: `answers.py` (one target's answer), `stored_answer.py`, `store.py` (the
  SQLite pair store), `pair_of.py` (a record and its answers as a measured pair), `task.py`
  (what a request can be checked for);
- judging: `measures.py` (per-pair measures), `analysis.py` (per-slice canary analysis),
  `sequential.py` (the anytime-valid paired test), `judging.py` (judging stored pairs),
  `rules.py` (the pair rollback rules), `stage_rule.py` (a stage's outcome), `settings.py`
  (the policy's `shadow:` section).
"""
