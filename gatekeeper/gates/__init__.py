"""The staged gates: one package per gate (`startup/`, `numerics/`, `golden/`, `longctx/`), each
with its `gate.py`, its `settings.py` (defaults and tolerances) and the internals only it uses.

Shared by every gate: `interface.py` (the `Gate` contract and the `GateContext` it runs against),
`gatekeeper/noise.py` (the reference's noise-floor pass, shared with baseline recording). `registry.py` lists the gates in stage order.

To add a gate: a package with a `Gate` subclass (id, stage, title, a docstring saying what it
checks and what a failure looks like, a frozen `Settings` dataclass, `run`, and `validate` if
something must be checked before any engine starts), then one entry in `registry.py`; its policy
section and report section follow from those.
"""
