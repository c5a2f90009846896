"""The RunPlan: everything a run needs, resolved and validated before any engine starts.

`plan.py` builds it from the configuration layers; `runner.py` executes it; a gate's
`validate(plan)` reads it at plan time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gatekeeper.config.policy import Policy
from gatekeeper.config.run_options import OptionSources, RunOptions
from gatekeeper.golden.golden_set import GoldenSet
from gatekeeper.redact import Redactor
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.targets.interface import TargetSpec


@dataclass(frozen=True)
class RunPlan:
    """The two targets, the policy (with each gate's typed settings), the golden sets (loaded
    when a selected gate uses them), where reports go, and the run's seed and request timeout;
    `options` and `sources`: the resolved run options it was made from and where each came from
    (its fingerprint hashes them, plan.json records them for a rejudge)."""

    reference: TargetSpec
    candidate: TargetSpec
    policy: Policy
    golden: tuple[GoldenSet, ...]
    golden_paths: tuple[str, ...]
    out_dir: Path
    run_id: str
    gates: tuple[str, ...] | None = None
    seed: int = 0
    timeout_s: float = 120.0
    on_rollback: tuple[str, ...] = ()  # hook commands / webhook URLs (gatekeeper/hooks.py)
    restricted: tuple[str, ...] = ()  # what the run's flags left out within its gates (--cases, --limit): it is partial
    reference_cache: str | None = None  # the reference answer cache's directory (None: the reference is asked everything)
    report_links: ReportLinks = RELATIVE  # where summary.md's links point (--report-url)
    options: RunOptions | None = None  # None: a plan made by hand (tests)
    sources: OptionSources = field(default_factory=lambda: OptionSources({}))

    def redactor(self) -> Redactor:
        """What keeps this run's secrets (the targets' API keys, and anything shaped like a
        credential) out of every file and line it writes."""
        return Redactor([*self.reference.secrets(), *self.candidate.secrets()])
