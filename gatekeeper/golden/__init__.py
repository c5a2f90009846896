"""Golden sets: versioned prompt cases with assertions, their loader, choosing cases by name
(`case_selection.py`), and reference baselines.

The gate side only: nothing here imports torch or the bundled engine.
"""

from gatekeeper.golden.assertions import REGISTRY, Assertion, Outcome, SpecError, build_assertion
from gatekeeper.golden.baseline import Baseline, load_baseline, record_baseline
from gatekeeper.golden.golden_set import GoldenCase, GoldenSet, load_golden_set, load_golden_sets, parse_golden_set

__all__ = [
    "REGISTRY", "Assertion", "Baseline", "GoldenCase", "GoldenSet", "Outcome", "SpecError", "build_assertion",
    "load_baseline", "load_golden_set", "load_golden_sets", "parse_golden_set", "record_baseline",
]
