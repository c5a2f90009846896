"""Every `gatekeeper` command pays for what its process imports, and the test suites start
thousands of them: scipy.stats (about 0.7 s here) is imported where a gate judges, never where a
command is parsed or a plan is made (a dry run, a bad option's one line, `--help`)."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT


def test_making_a_plan_imports_no_scipy_stats():
    probe = ("import sys\n"
             "from gatekeeper import cli\n"
             "import gatekeeper.run.plan, gatekeeper.run.runner, gatekeeper.gates.registry, gatekeeper.report.run.files\n"
             "print(sorted(m for m in sys.modules if m == 'scipy.stats' or m.startswith('scipy.stats.')))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout[:2000]
