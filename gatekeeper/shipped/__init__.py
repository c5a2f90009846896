"""The shipped policies, golden sets, matrices and CI workflows as package data.

They live at the repository's top level (`gates/`, `golden_sets/`, `matrices/`, `docs/ci/`); the entries
here are symlinks to them, so a wheel carries them and an installed gatekeeper finds its
defaults (`config/run_config.find_file`) without a checkout.
"""

from pathlib import Path

SHIPPED = Path(__file__).resolve().parent
