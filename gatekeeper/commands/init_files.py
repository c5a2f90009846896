"""The files `gatekeeper init` writes for gating one candidate URL against one reference URL:
a run config, a policy (the shipped default, to edit), and a GitHub Actions workflow.

`init_files(answers)` is pure: it returns each file's path (relative to the project directory)
and text; the command checks, writes and verifies them. The run config names the variables the
API keys come from (`REFERENCE_API_KEY`, `CANDIDATE_API_KEY`: the workflow maps repository
secrets onto them), never a key. With `keys=False` (`init --no-keys`) no file says anything about
keys: no key variables, no secrets, no key flags.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from gatekeeper.shipped import SHIPPED

RUN_CONFIG = "gatekeeper.yaml"
POLICY = "gatekeeper-policy.yaml"
WORKFLOW = ".github/workflows/gatekeeper.yml"
KEY_VARIABLES = {"reference": "REFERENCE_API_KEY", "candidate": "CANDIDATE_API_KEY"}
_TEMPLATE = SHIPPED / "ci" / "github-gate.yml"
# The shipped workflow takes the URLs from repository variables; the written one from the run config.
_URL_ENV = ("          GATEKEEPER_REFERENCE: ${{ vars.GATEKEEPER_REFERENCE_URL }}\n"
            "          GATEKEEPER_CANDIDATE: ${{ vars.GATEKEEPER_CANDIDATE_URL }}\n")
_RUN_LINE = "gatekeeper run --out runs \\"
# What a workflow for servers without keys leaves out: the secrets line of the header, the step's
# key variables and the key flags (then the step has no env left at all).
_KEY_SECRETS = ("#   secrets    GATEKEEPER_REFERENCE_API_KEY, GATEKEEPER_CANDIDATE_API_KEY (leave unset for key-less "
                "servers)\n")
_STEP_ENV = ("        env:\n" + _URL_ENV
             + "          REFERENCE_API_KEY: ${{ secrets.GATEKEEPER_REFERENCE_API_KEY }}  # not GATEKEEPER_*: those names "
               "are options\n"
             + "          CANDIDATE_API_KEY: ${{ secrets.GATEKEEPER_CANDIDATE_API_KEY }}\n")
_KEY_FLAGS = "\n            --reference-key-env REFERENCE_API_KEY \\\n            --candidate-key-env CANDIDATE_API_KEY\n"


@dataclass(frozen=True)
class InitAnswers:
    """What `gatekeeper init` was told: the two URLs, the dtype each serves, the served model id."""

    reference: str
    candidate: str
    reference_dtype: str | None = None
    candidate_dtype: str | None = None
    served_model: str | None = None
    keys: bool = True  # name the key variables (False: servers without keys)


def run_config(a: InitAnswers) -> str:
    """gatekeeper.yaml: the targets, their key variables and declared dtypes, the policy, where reports go."""
    config: dict[str, object] = {"reference": a.reference, "candidate": a.candidate}
    if a.keys:
        config |= {f"{role}_key_env": name for role, name in KEY_VARIABLES.items()}
    for role, dtype in (("reference", a.reference_dtype), ("candidate", a.candidate_dtype)):
        if dtype:
            config[f"{role}_declare"] = {"dtype": dtype}
    if a.served_model:
        config["served_model"] = a.served_model
    config |= {"policy": POLICY, "out": "reports"}
    head = ("# gatekeeper run config (written by `gatekeeper init`): `gatekeeper run -c gatekeeper.yaml`.\n"
            + ("# Keys are read from the variables named here, never written in this file. " if a.keys else "# ")
            + "Options: README.md,\n"
            "# `gatekeeper run --help`; check before the first run: `gatekeeper run -c gatekeeper.yaml --dry-run`.\n")
    undeclared = [role for role, d in (("reference", a.reference_dtype), ("candidate", a.candidate_dtype)) if not d]
    if undeclared:
        head += (f"# No dtype declared for the {' and '.join(undeclared)}: the tolerances assume float32. Add e.g.\n"
                 f"#   {undeclared[0]}_declare: {{dtype: bf16}}\n")
    return head + yaml.safe_dump(config, sort_keys=False)


def policy() -> str:
    """gatekeeper-policy.yaml: the shipped default policy, with a header saying where it came from."""
    text = (SHIPPED / "gates" / "default.yaml").read_text(encoding="utf-8")
    return ("# Copied from gatekeeper's gates/default.yaml by `gatekeeper init`: edit the thresholds, the blocking\n"
            "# rules and each gate's settings here (every key: gatekeeper/schemas/policy.schema.json).\n" + text)


def workflow(keys: bool = True) -> str:
    """.github/workflows/gatekeeper.yml: the shipped gate workflow (docs/ci/github-gate.yml), taking
    the targets from the run config instead of repository variables; without `keys`, with no
    secrets, key variables or key flags."""
    text = _TEMPLATE.read_text(encoding="utf-8")
    if any(part not in text for part in (_URL_ENV, _RUN_LINE, _KEY_SECRETS, _STEP_ENV, _RUN_LINE + _KEY_FLAGS)):
        raise RuntimeError(f"{_TEMPLATE} no longer has the lines `gatekeeper init` adapts")  # a packaging bug, not the user's
    if not keys:
        text = (text.replace(_KEY_SECRETS, "").replace(_STEP_ENV, "")
                .replace(_RUN_LINE + _KEY_FLAGS, "gatekeeper run -c gatekeeper.yaml --out runs\n"))
    text = text.replace(_URL_ENV, "").replace(_RUN_LINE, "gatekeeper run -c gatekeeper.yaml --out runs \\")
    return text.replace("#   variables  GATEKEEPER_REFERENCE_URL, GATEKEEPER_CANDIDATE_URL (e.g. http://vllm-ref:8000)\n",
                        "#   (the URLs are in gatekeeper.yaml, written by `gatekeeper init`)\n")


def init_files(a: InitAnswers) -> dict[str, str]:
    """Each file `gatekeeper init` writes: path relative to the project directory → text."""
    return {RUN_CONFIG: run_config(a), POLICY: policy(), WORKFLOW: workflow(a.keys)}
