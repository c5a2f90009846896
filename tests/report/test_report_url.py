"""`--report-url BASE`: summary.md's links (each check's place in correctness.html, the other report
files in its footer) become BASE/… so they work in a PR comment; without it they stay relative; a
URL that is not http(s), has no host, or carries a user name, password or query is exit 3 with one
line that never repeats the credential."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from gatekeeper.report import render_markdown
from gatekeeper.report_links import ReportLinks, parse_report_url
from paths import ROOT
from report_runs import rollback_run
from run_util import gk_run

BASE = "https://ci.example/artifacts/123"
_LINK = re.compile(r"\]\(([^)]*)\)")


def _gk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**base, "PYTHONPATH": str(ROOT), **(env or {})}, check=False)


@pytest.mark.slow  # ~17 s: out of the default suite's 15 minutes (CI runs it)
def test_a_run_with_a_report_url_links_summary_md_under_it_and_a_rejudge_takes_its_own(tmp_path):
    """A real run (gate 1 on the bundled default, the candidate logging a fallback warning: a
    ROLLBACK, so a check is linked) writes summary.md whose every link starts with BASE; its
    rejudge without the flag links relatively, with another base under that one."""
    run = gk_run(tmp_path / "runs", "--gates", "startup", "--candidate-fault", "silent-fallback", "--report-url", BASE + "/")
    assert run.code == 1 and run.run_dir is not None, run.stderr
    links = _LINK.findall((run.run_dir / "summary.md").read_text())
    assert links and all(link.startswith(BASE + "/") for link in links), links
    assert any(link.startswith(BASE + "/correctness.html#check-startup.") for link in links), links
    assert {f"{BASE}/{name}" for name in ("correctness.html", "performance.html", "summary.json", "junit.xml")} <= set(links)
    for page in ("correctness.html", "performance.html"):  # each page's row of the run's files: relative, and each there
        row = re.search(r'<span class="files" id="files">(.*?)</span>', (run.run_dir / page).read_text()).group(1)
        files = re.findall(r'href="([^"]*)"', row)
        assert page not in files and {"summary.json", "records.jsonl", "answers/", "candidate.log"} <= set(files), files
        assert all((run.run_dir / f).exists() for f in files), [f for f in files if not (run.run_dir / f).exists()]
    assert (run.run_dir / "correctness.html").read_text().count(BASE) == 0  # the pages link beside themselves

    plain = _gk("rejudge", str(run.run_dir), "--out", str(tmp_path / "plain"))
    assert plain.returncode == 1, plain.stderr
    (plain_dir,) = (tmp_path / "plain").iterdir()
    links = _LINK.findall((plain_dir / "summary.md").read_text())
    assert "correctness.html" in links and not any("://" in link for link in links), links  # the recorded base is not reused
    other = "https://ci.example/artifacts/124"
    based = _gk("rejudge", str(run.run_dir), "--out", str(tmp_path / "based"), "--report-url", other)
    assert based.returncode == 1, based.stderr
    (based_dir,) = (tmp_path / "based").iterdir()
    assert all(link.startswith(other + "/") for link in _LINK.findall((based_dir / "summary.md").read_text()))


def test_the_renderer_takes_the_links_as_a_value():
    """Every link of a ROLLBACK's summary.md (checks, the first differing answer, the footer)
    follows `ReportLinks`; the default is relative, as before."""
    run = rollback_run()
    based = _LINK.findall(render_markdown(run, ReportLinks(BASE)))
    relative = _LINK.findall(render_markdown(run))
    assert len(based) == len(relative) > 5 and [f"{BASE}/{link}" for link in relative] == based


@pytest.mark.parametrize("given,said", [
    ("ftp://ci.example/x", "--report-url: must be an http(s) URL with a host, e.g. https://ci.example/artifacts/123, not 'ftp://ci.example/x'"),
    ("ci.example/artifacts/123", "--report-url: must be an http(s) URL with a host"),
    ("https://", "--report-url: must be an http(s) URL with a host"),
    ("https://ci.example:port/x", "--report-url: 'https://ci.example:port/x' is not a URL"),
    ("https://bot:s3cret@ci.example/x", "--report-url: carries a user name or password"),
    ("https://ci.example/x?sig=s3cret", "--report-url: must have no ?query or #fragment"),
])
def test_a_bad_report_url_is_one_line_exit_3(given, said):
    done = _gk("run", "--dry-run", "--report-url", given)
    assert done.returncode == 3 and len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr
    assert "s3cret" not in done.stderr + done.stdout


def test_the_variable_and_the_other_commands_check_it_too(tmp_path):
    env = _gk("run", "--dry-run", env={"GATEKEEPER_REPORT_URL": "https://u:s3cret@ci.example/x"})
    assert env.returncode == 3 and "GATEKEEPER_REPORT_URL: carries a user name or password" in env.stderr, env.stderr
    assert "s3cret" not in env.stderr
    rejudge = _gk("rejudge", str(tmp_path), "--report-url", "ftp://x")
    assert rejudge.returncode == 3 and rejudge.stderr.strip().splitlines() == [
        "gatekeeper: error: --report-url: must be an http(s) URL with a host, e.g. https://ci.example/artifacts/123, "
        "not 'ftp://x'"], rejudge.stderr
    matrix = _gk("matrix", "run", "matrices/bundled.yaml", "--report-url", BASE)
    assert matrix.returncode == 3 and "a matrix run writes one per cell" in matrix.stderr, matrix.stderr


def test_the_base_is_normalised_into_one_link_target():
    assert parse_report_url("HTTPS://ci.example/a b(1)/") == "https://ci.example/a%20b%281%29"
    assert ReportLinks("https://ci.example").to("correctness.html", "check-x") == "https://ci.example/correctness.html#check-x"
    assert ReportLinks().to("summary.json") == "summary.json"
