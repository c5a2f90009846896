"""Inputs that used to crash gatekeeper with a traceback and exit 1 — the code of ROLLBACK — now
get one line naming file and line and exit 3; a crash of gatekeeper itself exits 4, never 1."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT


def gk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture()
def bad(tmp_path: Path) -> Path:
    (tmp_path / "deep.yaml").write_text("version: 1\ngates:\n  startup:\n    x: " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp_path / "golden.yaml").write_bytes(b"version: t\ncases:\n  - id: a\n    family: f\n"
                                           b"    messages: [{role: user, content: \"\xff\xfe\"}]\n"
                                           b"    assert: [{type: equals_reference}]\n")
    (tmp_path / "traffic.jsonl").write_bytes(b'{"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "hi"}]}}\n'
                                             b'{"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "\xff"}]}}\n')
    (tmp_path / "one.jsonl").write_bytes(b'{"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "\xff"}]}}\n')
    (tmp_path / "deep.jsonl").write_text("[" * 100000 + "]" * 100000 + "\n")
    return tmp_path


@pytest.mark.parametrize("args,where", [
    (("run", "--policy", "{d}/deep.yaml", "--dry-run"), "deep.yaml: YAML nested too deeply"),
    (("run", "--golden", "{d}/golden.yaml", "--dry-run"), "golden.yaml:5: not UTF-8"),
    (("traffic", "check", "{d}/traffic.jsonl"), "traffic.jsonl:2: not UTF-8"),
    (("pairs", "import", "{d}/one.jsonl", "--store", "{d}/s.db"), "one.jsonl:1: not UTF-8"),
    (("traffic", "check", "{d}/deep.jsonl"), "deep.jsonl:1: JSON nested too deeply"),
])
def test_malformed_files_are_one_line_usage_errors(bad: Path, args: tuple[str, ...], where: str):
    r = gk(*(a.format(d=bad) for a in args))
    assert r.returncode == 3, r.stderr
    assert where in r.stderr and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_line_that_is_not_utf8_is_one_bad_line_that_bad_lines_skip_passes_over(bad: Path):
    from gatekeeper.traffic.format import load_traffic

    traffic = load_traffic(bad / "traffic.jsonl", skip_bad=True)
    assert len(traffic.records) == 1 and len(traffic.skipped) == 1 and ":2: not UTF-8" in traffic.skipped[0]


def test_a_crash_of_gatekeeper_itself_exits_4_with_one_line_and_the_traceback_in_a_file():
    r = subprocess.run([sys.executable, "-c", "from gatekeeper.cli_exit import crashed; crashed(ValueError('boom'))"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "internal error: ValueError: boom" in r.stderr
    path = Path(re.search(r"traceback is in (\S+)\)", r.stderr).group(1))
    assert "ValueError: boom" in path.read_text()
    path.unlink()


def test_with_json_an_end_without_a_verdict_is_a_json_object_on_stdout(tmp_path):
    import json

    r = gk("run", "--json", "--policy", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    error = json.loads(r.stdout)
    assert error["format"] == "gatekeeper.error/1" and error["exit_code"] == 3 and "missing.yaml" in error["error"]
    assert not (tmp_path / "out").exists()
