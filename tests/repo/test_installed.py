"""Installed as a CI job installs it: a wheel built from the repository, run from a directory
that is not the checkout, finds its default policy and golden set as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from paths import ROOT


def test_a_built_wheel_runs_with_its_defaults_outside_the_checkout(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp_path / "dist"), str(ROOT)], capture_output=True, text=True, check=False, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("gatekeeper-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("gatekeeper/shipped/gates/default.yaml", "gatekeeper/shipped/gates/smoke.yaml",
                    "gatekeeper/shipped/golden_sets/core.yaml", "gatekeeper/models/gk-tiny/model.safetensors",
                    "gatekeeper/schemas/summary.schema.json", "gatekeeper/schemas/policy.schema.json",
                    "gatekeeper/schemas/run-config.schema.json"):
        assert shipped in names, shipped
    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                             capture_output=True, text=True, check=False, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = ("import gatekeeper, sys; from gatekeeper.cli import main; "
            "assert gatekeeper.__file__.startswith(sys.argv[1]), gatekeeper.__file__; "
            "sys.argv = ['gatekeeper', 'run', '--dry-run', '--policy', 'gates/smoke.yaml']; main()")
    run = subprocess.run([sys.executable, "-c", code, str(site)], cwd=elsewhere, capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "site/gatekeeper/shipped/gates/smoke.yaml" in run.stdout, run.stdout
    assert "golden: 17 cases from " in run.stdout and "site/gatekeeper/shipped/golden_sets/core.yaml" in run.stdout, run.stdout
