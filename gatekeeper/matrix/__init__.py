"""Execution-path matrices (`matrices/*.yaml`): axes of a candidate's execution path, the cells
they span, how one cell becomes one `gatekeeper run`, and how the cells' runs merge.

Data flows one way: `spec.py` loads and validates a file into a `Matrix` of `Cell`s (with
`selector.py`, `candidate.py`, `template.py` and `expect.py` for its parts); `cell_run.py` turns
one cell into a run's options and records the run directory as the cell's; `job_matrix.py`
renders the cells as a CI job matrix; `sweep.py` runs every cell on this machine, one
`gatekeeper run` subprocess per cell; `merge.py` merges the cells' run directories into one
judgement, with `localise.py` (which path fails) and `record.py` (the path record per cell,
docs/bug-classes.md#path-record), and hands it to the report package (report/matrix_*.py) to
render and write.
The format is documented in docs/matrices.md.
"""
