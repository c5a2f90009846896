"""The staged gates, one package per gate in stage order: `startup/` (gate 1), `numerics/` (2),
`golden/` (3), `longctx/` (4), `shadow/` (5) and `performance/` (after correctness). Each has its
`gate.py` (the `Gate` subclass), its `settings.py` (defaults and tolerances), its `checks.py` (the
check ids and typed findings other code may read: nothing outside a gate's package writes one of
its check ids as a literal) and the internals only it uses: code outside this package may import,
even through another package, only a gate's `checks` and `settings` and the shared `interface`,
`registry` and `finding` (tests/repo/test_contracts.py).

Shared by every gate: `interface.py` (the `Gate` contract and the `GateContext` it runs against)
and `registry.py` (the gates in stage order). Libraries the gates build on live outside this
package: `gatekeeper/stats/` (noise floor, near ties, Holm, percentiles), `gatekeeper/endpoints/`
(the HTTP edge), `gatekeeper/traffic/` (gate 5's library, shared with the live proxy),
`gatekeeper/perf/` (the performance gate's measuring library, shared with `gatekeeper perf calibrate`).

Adding a gate: docs/adding-a-gate.md.
"""
