"""docs/llama-cpp.md's worked llama.cpp run, run exactly as the page writes it.

The page's blocks tagged `<!-- doc-test: NAME -->` are its commands and its run config; this test
writes the config where the page's command reads it and runs the commands with a shell, in a
directory whose `scripts/` is the repository's (the launch commands are relative to the working
directory, as they are for a user at the repository's root). Marked `llama_cpp` (a real build).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paths import ROOT

pytestmark = pytest.mark.llama_cpp

DOC = ROOT / "docs" / "llama-cpp.md"
_BLOCK = re.compile(r"<!-- doc-test: (?P<name>[\w.\-]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def blocks() -> dict[str, str]:
    """The page's tagged blocks by name."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text())}


def test_the_page_has_its_blocks():
    assert set(blocks()) == {"build", "llama.yaml", "run"}


@pytest.mark.serial  # its performance gate measures the two servers: alone on the machine
def test_the_documented_llama_cpp_run_promotes(tmp_path):
    page = blocks()
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    (tmp_path / "llama.yaml").write_text(page["llama.yaml"])
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           # exported, as the page suggests: gatekeeper must ignore the script's variable (the script's default)
           "GATEKEEPER_LLAMA_CACHE": os.environ.get("GATEKEEPER_LLAMA_CACHE", str(Path.home() / ".cache" / "gatekeeper" / "llama-cpp"))}
    for name in ("build", "run"):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", page[name]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=3600)
        if name == "build":
            assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = sorted((tmp_path / "reports").glob("*/*/summary.json"))
    assert runs, done.stderr[-3000:]
    summary = json.loads(runs[-1].read_text())
    checks = [c for g in summary["gates"] for c in g["checks"]]
    assert [(c["id"], c["reason"][:200]) for c in checks if c["status"] == "ERROR"] == []
    assert [g["id"] for g in summary["gates"] if g["status"] == "SKIP"] == []
    assert summary["verdict"] == "PROMOTE", summary["reasons"]
    assert done.returncode == 0
    # every gate ran (the page's run is the quick policy: every gate, smaller samples; three default-policy
    # runs are in docs/llama-cpp.md), and what the server lacks is named once
    assert [g["id"] for g in summary["gates"] if g.get("excluded")] == []
    caps = next(c for c in checks if c["id"] == "startup.capabilities")
    assert caps["status"] == "PASS" and caps["metrics"]["neither"] == ["prompt_logprobs", "tool_parsing", "tokenize"], caps
