"""The files `gatekeeper init` writes for gating one candidate URL against one reference URL:
a run config, a policy (the shipped default, to edit), and a GitHub Actions workflow.

`init_files(answers)` is pure: it returns each file's path (relative to the project directory)
and text; the command checks, writes and verifies them. The run config names the variables the
API keys come from (`REFERENCE_API_KEY`, `CANDIDATE_API_KEY`: the workflow maps repository
secrets onto them), never a key. With `keys=False` (`init --no-keys`) no file says anything about
keys: no key variables, no secrets, no key flags, and the workflow's header asks for nothing to be
set in the repository's settings.

The workflow is the shipped docs/ci/github-gate.yml with the `_EDITS` below: it installs the
gatekeeper pinned in its `INSTALL_GATEKEEPER` (never the project itself), gates into
runs/<workflow run id>-<attempt>/, keeps the reference cache in the CI cache, and runs on pull
requests and on Run workflow with a candidate input (docs/ci-outputs.md).
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


@dataclass(frozen=True)
class _Edit:
    """One place where the written workflow differs from the shipped one: the shipped text, and
    what replaces it (every occurrence) with keys and without."""

    shipped: str
    keyed: str
    keyless: str


_INTRO = ("# GitHub Actions, written by `gatekeeper init`: gate the candidate against the reference named in\n"
          "# gatekeeper.yaml on every pull request, and on demand (Actions → gatekeeper gate → Run workflow,\n"
          "# optionally with another candidate URL).")
_PIN = "Pin the gatekeeper it installs: INSTALL_GATEKEEPER under `env:` below, the one place it is set.\n"
_SECRETS = ("#   secrets    GATEKEEPER_REFERENCE_API_KEY, GATEKEEPER_CANDIDATE_API_KEY (leave unset for key-less "
            "servers)\n")
_URL_ENV = ("          GATEKEEPER_REFERENCE: ${{ vars.GATEKEEPER_REFERENCE_URL }}\n"
            "          GATEKEEPER_CANDIDATE: ${{ vars.GATEKEEPER_CANDIDATE_URL }}\n")
_KEY_ENV = ("          REFERENCE_API_KEY: ${{ secrets.GATEKEEPER_REFERENCE_API_KEY }}  # not GATEKEEPER_*: those names "
            "are options\n"
            "          CANDIDATE_API_KEY: ${{ secrets.GATEKEEPER_CANDIDATE_API_KEY }}\n")
_RUN = 'gatekeeper run "${args[@]}"'
_KEY_FLAGS = " \\\n            --reference-key-env REFERENCE_API_KEY \\\n            --candidate-key-env CANDIDATE_API_KEY\n"
_EDITS = (
    # The header says what to set in the repository's settings: the URLs are in the run config, and
    # without keys there is nothing to set at all.
    _Edit("# GitHub Actions: gate one candidate server against one reference server on every pull request,\n"
          "# and on demand (Actions → gatekeeper gate → Run workflow, optionally with another candidate URL).\n"
          "# Copy this file to .github/workflows/ and set, under Settings → Secrets and variables → Actions:\n"
          "#   variables  GATEKEEPER_REFERENCE_URL, GATEKEEPER_CANDIDATE_URL (e.g. http://vllm-ref:8000)\n"
          + _SECRETS + "# Then p" + _PIN[1:],
          _INTRO + " Set, under Settings → Secrets and variables → Actions:\n" + _SECRETS + "# Then p" + _PIN[1:],
          _INTRO + "\n# The servers take no key: nothing to set in the repository's settings.\n# " + _PIN),
    _Edit(_URL_ENV, "", ""),  # the URLs come from gatekeeper.yaml
    _Edit(_KEY_ENV, _KEY_ENV, ""),
    _Edit(_RUN + _KEY_FLAGS, 'gatekeeper run -c gatekeeper.yaml "${args[@]}"' + _KEY_FLAGS,
          'gatekeeper run -c gatekeeper.yaml "${args[@]}"\n'),
    # The cache is keyed by the reference's URL and the run config; here the run config holds the URL.
    _Edit("gatekeeper-reference-${{ vars.GATEKEEPER_REFERENCE_URL }}-", "gatekeeper-reference-", "gatekeeper-reference-"),
)


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
    secrets, key variables or key flags, and a header that asks nothing to be set."""
    text = _TEMPLATE.read_text(encoding="utf-8")
    for edit in _EDITS:
        if edit.shipped not in text:  # a packaging bug, not the user's
            raise RuntimeError(f"{_TEMPLATE} no longer has the text `gatekeeper init` adapts: {edit.shipped[:60]!r}")
        text = text.replace(edit.shipped, edit.keyed if keys else edit.keyless)
    return text


def init_files(a: InitAnswers) -> dict[str, str]:
    """Each file `gatekeeper init` writes: path relative to the project directory → text."""
    return {RUN_CONFIG: run_config(a), POLICY: policy(), WORKFLOW: workflow(a.keys)}
