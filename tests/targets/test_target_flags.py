"""The flags for real targets: `--reference-key-env` / `--candidate-key-env` (the NAME of the
variable holding a key), `--…-log-file` / `--…-log-command` (where a URL target's log is read),
the same as GATEKEEPER_* variables and run-config keys, and the warnings `--dry-run` prints for
real targets (an undeclared dtype, no key variable named, the load a URL reference will carry).

Each test runs the real command line in a subprocess; most dry runs point at a port nothing
listens on (a dry run asks a URL target only for its models, prints the whole plan, and exits 3
naming each target that does not answer). The last test starts a bundled server that wants a key:
a dry run exits 3 when it answers 401 without the key or refuses a wrong one, estimates the
reference's load from one short answer's speed, and the key named by the flags is the one a run sends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gatekeeper.config.option_table import BY_NAME
from gatekeeper.targets.spec import KEY_SCHEMAS
from paths import ROOT

GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"
NOWHERE = "http://127.0.0.1:9"  # the discard port: a dry run must not need it to answer
SECRET = "sk-test-flag-secret-7c6b5a"


def gk(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`gatekeeper ARGS` in a subprocess with the caller's environment minus GATEKEEPER_*, plus `env`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_")}
    return subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**base, **(env or {})}, cwd=cwd)


def dry_run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            unusable: int = 0) -> subprocess.CompletedProcess:
    """A dry run that prints its plan: exit 0, or, when `unusable` URL targets do not answer or
    refuse their key, exit 3 with one line on stderr naming each of them."""
    done = gk("run", "--dry-run", *args, env=env, cwd=cwd)
    assert "Traceback" not in done.stderr and target_line(done.stdout, "candidate"), done.stdout + done.stderr
    if not unusable:
        assert done.returncode == 0, done.stderr
        return done
    lines = done.stderr.splitlines()
    assert done.returncode == 3 and len(lines) == 1 and lines[0].startswith("gatekeeper: error: "), done.stderr
    assert lines[0].count("http://") == unusable, lines
    return done


def target_line(out: str, role: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{role}: "))


def warnings(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("warning:")]


def test_the_key_option_takes_names_as_a_target_s_api_key_env_does():
    assert BY_NAME["candidate_key_env"].schema["pattern"] == KEY_SCHEMAS["api_key_env"]["pattern"]
    assert BY_NAME["reference_key_env"].env == "GATEKEEPER_REFERENCE_KEY_ENV"


def test_the_flags_reach_the_plan(tmp_path):
    log = tmp_path / "candidate.log"
    log.write_text("INFO ready\n")
    done = dry_run("--reference", NOWHERE, "--candidate", NOWHERE + "/v1", "--model", "m",
                   "--reference-key-env", "GK_REF_KEY", "--candidate-key-env", "GK_CAND_KEY",
                   "--reference-log-command", "docker logs vllm-prod", "--candidate-log-file", str(log),
                   env={"GK_REF_KEY": SECRET, "GK_CAND_KEY": SECRET + "-2"}, unusable=2)
    reference, candidate = target_line(done.stdout, "reference"), target_line(done.stdout, "candidate")
    assert "key from $GK_REF_KEY" in reference and "log from the command 'docker logs vllm-prod'" in reference, reference
    assert "key from $GK_CAND_KEY" in candidate and f"log from file {log}" in candidate, candidate
    assert not any("API key" in w for w in warnings(done.stdout)), done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_the_variables_set_them_too(tmp_path):
    done = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m",
                   env={"GATEKEEPER_CANDIDATE_KEY_ENV": "GK_CAND_KEY", "GK_CAND_KEY": SECRET,
                        "GATEKEEPER_CANDIDATE_LOG_COMMAND": "journalctl -u vllm",
                        "GATEKEEPER_REFERENCE_LOG_FILE": str(tmp_path / "ref.log")}, unusable=2)
    assert "key from $GK_CAND_KEY" in target_line(done.stdout, "candidate")
    assert "log from the command 'journalctl -u vllm'" in target_line(done.stdout, "candidate")
    assert f"log from file {tmp_path / 'ref.log'}" in target_line(done.stdout, "reference")
    assert any("log file" in w and "is not there" in w for w in warnings(done.stdout)), done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_the_flags_win_over_the_run_config_s_target_keys(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(f"candidate: {{kind: url, url: {NOWHERE!r}, api_key_env: GK_FILE_KEY, log_command: 'docker logs a'}}\n"
                      "candidate_key_env: GK_CONFIG_KEY\n")
    env = {"GK_FILE_KEY": SECRET, "GK_CONFIG_KEY": SECRET, "GK_FLAG_KEY": SECRET}
    in_file = target_line(dry_run("-c", str(config), "--model", "m", env=env, unusable=1).stdout, "candidate")
    assert "key from $GK_CONFIG_KEY" in in_file and "log from the command 'docker logs a'" in in_file, in_file
    flagged = target_line(dry_run("-c", str(config), "--model", "m", "--candidate-key-env", "GK_FLAG_KEY",
                                  "--candidate-log-file", "/var/log/vllm.log", env=env, unusable=1).stdout,
                          "candidate")
    assert "key from $GK_FLAG_KEY" in flagged and "log from file /var/log/vllm.log" in flagged, flagged
    assert "docker logs a" not in flagged


@pytest.mark.parametrize("args, env, fragment", [
    (["--candidate", NOWHERE, "--candidate-key-env", SECRET], {},
     "--candidate-key-env: must be the NAME of an environment variable"),
    (["--candidate", NOWHERE, "--candidate-key-env", "1ABC"], {}, "--candidate-key-env: must be the NAME"),
    (["--candidate", NOWHERE], {"GATEKEEPER_CANDIDATE_KEY_ENV": "has space"},
     "GATEKEEPER_CANDIDATE_KEY_ENV: must be the NAME of an environment variable"),
    (["--candidate", NOWHERE, "--candidate-key-env", "GK_SURELY_UNSET_KEY"], {},
     "--candidate-key-env: names GK_SURELY_UNSET_KEY, which is not set in the environment"),
    (["--candidate", NOWHERE, "--reference-key-env", "GK_REF_KEY"], {"GK_REF_KEY": SECRET},
     "--reference-key-env: applies to URL and launch targets only"),
    (["--reference", NOWHERE, "--candidate-log-file", "/var/log/x.log"], {}, "--candidate-log-file: applies to URL targets only"),
    (["--candidate", NOWHERE, "--reference-log-command", "docker logs x"], {}, "--reference-log-command: applies to URL targets only"),
    (["--candidate", NOWHERE, "--candidate-log-file", "/x.log", "--candidate-log-command", "docker logs x"], {},
     "--candidate-log-file: give the candidate's log as a file or as a command, not both (also --candidate-log-command)"),
    (["--candidate", NOWHERE, "--candidate-log-command", "docker logs 'x"], {},
     "--candidate-log-command: is not a command line"),
    (["--candidate", NOWHERE, "--candidate-log-command", " "], {}, "--candidate-log-command: must be a non-empty string"),
    (["--candidate", NOWHERE], {"GATEKEEPER_CANDIDATE_LOG_FILE": "/x.log", "GATEKEEPER_CANDIDATE_LOG_COMMAND": "cat /x.log"},
     "GATEKEEPER_CANDIDATE_LOG_FILE: give the candidate's log as a file or as a command, not both"),
], ids=["key-itself", "digit-first", "variable-space", "unset", "bundled-key", "bundled-log-file", "bundled-log-command",
        "file-and-command", "unbalanced-quote", "blank-command", "variables-both"])
def test_bad_input_is_one_line_and_exit_3(tmp_path, args, env, fragment):
    done = gk("run", "--dry-run", "--model", "m", *args, env=env, cwd=tmp_path)
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gatekeeper: error: ") and fragment in lines[0], lines
    assert SECRET not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no run directory, no reports/


def test_a_launch_target_s_log_is_captured_so_the_log_flags_refuse_it(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("candidate: {kind: launch, command: 'my-server --port {port}'}\n")
    done = gk("run", "--dry-run", "-c", str(config), "--model", "m", "--candidate-log-file", "/x.log")
    assert done.returncode == 3 and done.stderr.strip() == (
        "gatekeeper: error: --candidate-log-file: applies to URL targets only (gatekeeper captures the log of the launch "
        "candidate it starts)"), done.stderr


def test_the_key_variable_s_value_appears_nowhere(tmp_path):
    env = {"GK_PROD_KEY": SECRET, "GATEKEEPER_REFERENCE_KEY_ENV": "GK_PROD_KEY"}
    done = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m", "--candidate-key-env", "GK_PROD_KEY",
                   "--candidate-log-command", f"docker logs vllm --token={SECRET}", env=env, cwd=tmp_path, unusable=2)
    assert SECRET not in done.stdout + done.stderr
    assert "$GK_PROD_KEY" in target_line(done.stdout, "reference")
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_warns_about_real_targets_it_cannot_judge_well():
    done = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m", unusable=2)
    found = warnings(done.stdout)
    for role in ("reference", "candidate"):
        assert any(w.startswith(f"warning: {role}: no dtype declared") and f"--{role}-declare dtype=bf16" in w
                   for w in found), found
        assert any(w.startswith(f"warning: {role}: no API key variable named") and f"--{role}-key-env" in w
                   for w in found), found
    assert any("gate 5 (shadow) replays" in w for w in found), found
    assert any("the performance gate" in w and "peak concurrency" in w for w in found), found
    quiet = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m", "--reference-key-env", "K",
                    "--candidate-key-env", "K", "--reference-declare", "dtype=bf16", "--candidate-declare", "dtype=bf16",
                    env={"K": SECRET}, unusable=2)
    unreachable = [w for w in warnings(quiet.stdout) if "did not answer GET /v1/models (connect" in w]
    assert len(unreachable) == 2, quiet.stdout  # one per URL target: nothing listens on the discard port
    assert [w for w in warnings(quiet.stdout) if "load on the reference" not in w and w not in unreachable] == [], quiet.stdout


def test_a_dry_run_whose_servers_refuse_connections_exits_3():
    """Both targets on a free loopback port nothing listens on: the plan is printed with one
    warning per target, and the dry run exits 3 (a CI pre-check must not pass) with one line naming both."""
    from server_util import free_port

    reference, candidate = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    done = gk("run", "--dry-run", "--reference", reference, "--candidate", candidate, "--model", "m")
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    said = [w for w in warnings(done.stdout) if "did not answer GET /v1/models (connect" in w]
    assert [w.split(":", 2)[1].strip() for w in said] == ["reference", "candidate"], done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gatekeeper: error: reference: " + reference), lines
    assert f"; candidate: {candidate} did not answer" in lines[0] and "Traceback" not in done.stderr, lines
    one = gk("run", "--dry-run", "--candidate", candidate, "--model", "m")  # a bundled reference is not asked
    assert one.returncode == 3 and one.stderr.count("did not answer") == 1, one.stderr


def test_the_load_on_a_url_reference_is_computed_from_the_policy(tmp_path):
    policy = tmp_path / "load.yaml"
    policy.write_text("""version: 1
name: load
gates:
  shadow:
    concurrency: 3
    noise_floor_concurrency: 2
    stages:
      - {name: first, share: 1.0, budget: 5}
      - {name: second, share: 1.0, budget: 7, concurrency: 4}
  performance:
    baseline: reference
    levels: [1, 3]
    pairs: 4
    block_requests: 2
    warmup_requests: 1
    sweep: [2, 6]
""")
    done = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m", "--policy", str(policy), unusable=2)
    load = [w for w in warnings(done.stdout) if "load on the reference" in w]
    assert len(load) == 2, done.stdout
    assert "replays up to 12 recorded requests (first 5, second 7)" in load[0], load[0]
    assert "up to 24 requests at concurrency up to 4" in load[0], load[0]
    assert "1 warm-up and 16 measured requests at concurrency 1, 3" in load[1], load[1]  # 2 levels x 4 pairs x 2
    assert "capacity sweep at concurrency 2, 6: peak concurrency 6" in load[1], load[1]
    only_startup = dry_run("--reference", NOWHERE, "--candidate", NOWHERE, "--model", "m", "--policy", str(policy),
                           "--gates", "startup,golden", unusable=2)
    assert not any("load on the reference" in w for w in warnings(only_startup.stdout)), only_startup.stdout


def test_a_bundled_reference_carries_no_load_warning():
    done = dry_run("--candidate", NOWHERE, "--model", "m", unusable=1)
    assert not any("load on the reference" in w for w in warnings(done.stdout)), done.stdout
    assert not any(w.startswith("warning: reference:") for w in warnings(done.stdout)), done.stdout


@pytest.mark.slow  # ~26 s: out of the default suite's 15 minutes (CI runs it)
def test_the_key_the_flags_name_is_the_key_sent(tmp_path):
    """A bundled server that wants a key, gated through `--candidate-key-env` / `--reference-key-env`:
    gate 1 reaches both roles (no 401), and the key reaches no output file."""
    pytest.importorskip("torch", reason="the bundled server needs the `engine` extra")
    import httpx
    from run_util import gk_run
    from server_util import running_server

    with running_server(GK_TINY, "--profile", "optimized", "--api-key", SECRET) as server:
        assert httpx.get(server.url + "/v1/models", timeout=10).status_code == 401  # it does want the key
        targets = ("--reference", server.url, "--candidate", server.url, "--model", "gk-tiny")
        keyless = warnings(dry_run(*targets, unusable=2).stdout)
        for role in ("reference", "candidate"):
            assert any(w.startswith(f"warning: {role}: {server.url} answers HTTP 401 without an API key")
                       and f"--{role}-key-env" in w for w in keyless), keyless
        assert not any("measured speed" in w for w in keyless), keyless
        wrong = warnings(dry_run(*targets, "--reference-key-env", "GK_WRONG", env={"GK_WRONG": "sk-wrong"}, unusable=2).stdout)
        assert any(f"reference: {server.url} refuses the key from GK_WRONG (HTTP 401)" in w for w in wrong), wrong
        keyed = dry_run(*targets, "--reference-key-env", "GK_TEST_FLAG_KEY", "--candidate-key-env", "GK_TEST_FLAG_KEY",
                        env={"GK_TEST_FLAG_KEY": SECRET})
        assert not any("401" in w or "refuses" in w for w in warnings(keyed.stdout)), keyed.stdout
        load = [w for w in warnings(keyed.stdout) if "load on the reference" in w]
        assert len(load) == 2 and all("min at the reference's measured speed (TTFT" in w for w in load), load
        assert SECRET not in keyed.stdout + keyed.stderr
        env = {**os.environ, "GK_TEST_FLAG_KEY": SECRET}
        out = gk_run(tmp_path, "--gates", "startup", "--reference", server.url, "--candidate", server.url,
                     "--model", "gk-tiny", "--reference-key-env", "GK_TEST_FLAG_KEY",
                     "--candidate-key-env", "GK_TEST_FLAG_KEY", env=env)
    assert out.summary is not None, out.stderr
    for role in ("reference", "candidate"):
        assert out.check(f"startup.models.{role}")["status"] == "PASS", out.check(f"startup.models.{role}")
    checks = [c for g in out.summary["gates"] for c in g["checks"]]
    assert not [c for c in checks if c["status"] == "ERROR"], [(c["id"], c.get("reason")) for c in checks]
    assert "401" not in out.stderr and "auth" not in out.stderr.lower(), out.stderr
    assert out.run_dir is not None
    for path in out.run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path.name
    assert SECRET not in out.stderr
