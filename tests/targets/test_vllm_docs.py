"""docs/vllm.md's worked vLLM upgrade, run exactly as the page writes it.

The page's blocks tagged `<!-- doc-test: NAME -->` are its commands and its run config; this test
writes the config where the page's command reads it and runs the commands with a shell, in a
directory whose `scripts/` is the repository's (the launch commands are relative to the working
directory, as they are for a user at the repository's root). Marked `vllm` (real releases).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_util import ROOT

pytestmark = pytest.mark.vllm

DOC = ROOT / "docs" / "vllm.md"
_BLOCK = re.compile(r"<!-- doc-test: (?P<name>[\w.\-]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def blocks() -> dict[str, str]:
    """The page's tagged blocks by name."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text())}


def test_the_page_has_its_blocks():
    assert set(blocks()) == {"builds", "vllm-upgrade.yaml", "run"}


@pytest.mark.serial  # its performance gate decides on two launched vLLM builds: alone on the machine
def test_the_documented_vllm_upgrade_runs_and_promotes(tmp_path):
    page = blocks()
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    (tmp_path / "vllm-upgrade.yaml").write_text(page["vllm-upgrade.yaml"])
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           # exported, as the page suggests: gatekeeper must ignore the script's variable (the script's default)
           "GATEKEEPER_VLLM_CACHE": os.environ.get("GATEKEEPER_VLLM_CACHE", str(Path.home() / ".cache" / "gatekeeper" / "vllm-cpu"))}
    for name in ("builds", "run"):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", page[name]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=3600)
        if name == "builds":
            assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = sorted((tmp_path / "reports").glob("*/*/summary.json"))
    assert runs, done.stderr[-3000:]
    summary = json.loads(runs[-1].read_text())
    checks = [c for g in summary["gates"] for c in g["checks"]]
    errors = [(c["id"], c["reason"][:200]) for c in checks if c["status"] == "ERROR"]
    assert errors == []
    skipped_gates = [g["id"] for g in summary["gates"] if g["status"] == "SKIP"]
    assert skipped_gates == [], [(c["id"], c["reason"][:200]) for c in checks if c["status"] == "SKIP"]
    assert summary["verdict"] == "PROMOTE", summary["reasons"]
    assert done.returncode == 0
