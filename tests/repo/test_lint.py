"""The tree stays clean under the project's ruff rules (pyproject.toml: pycodestyle, pyflakes,
bugbear): unused imports and variables, late-bound loop variables and the like fail here."""

import subprocess
import sys

from paths import ROOT


def test_ruff_finds_nothing():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                       cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_flags_an_unused_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr
