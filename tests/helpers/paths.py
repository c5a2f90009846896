"""Where things are in the checkout, for tests in any folder of tests/ (one definition, not a
`Path(__file__).parents[n]` per test that breaks when a test moves)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/helpers/paths.py -> the repository
TESTS = ROOT / "tests"
GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
