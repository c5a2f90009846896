"""The selftest's cells: each bundled fault with its trigger, the gate(s) built to catch it, and
clean cells with different seeds that must PROMOTE.

`catch_at` names the gates the design says catch the fault; a catch at an earlier gate is
reported as such (the run stops at the first failing gate, so a later gate never gets to try).
The quick subset runs the smoke policy on the gates it needs and takes about a minute.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.engine.faults import FAULTS

CLEAN_SEEDS = 10


@dataclass(frozen=True)
class SelftestCell:
    """One `gatekeeper run`: the candidate's faults and engine options, the gates that should
    catch it (empty: a clean cell, which must PROMOTE), the seed, and for the quick subset the
    policy and gates it runs."""

    id: str
    faults: tuple[str, ...] = ()
    opts: tuple[str, ...] = ()  # KEY=VALUE engine options of the bundled candidate
    catch_at: tuple[str, ...] = ()
    seed: int = 0
    quick_gates: str = ""  # "" : not in the quick subset
    explained: tuple[str, ...] = ()  # log-line regexes the cell's policy lists as explained path changes

    @property
    def clean(self) -> bool:
        """A cell without faults: anything but PROMOTE is a false alarm."""
        return not self.faults

    def base_policy(self, quick: bool) -> str:
        """The shipped policy the cell runs (its explanations are added to a copy of it)."""
        return "gates/smoke.yaml" if quick else "gates/default.yaml"

    def args(self, quick: bool, policy: str | None = None) -> list[str]:
        """The `gatekeeper run` arguments (without --out); `policy` replaces the shipped one."""
        out = ["--seed", str(self.seed)]
        for f in self.faults:
            out += ["--candidate-fault", f]
        for o in self.opts:
            out += ["--candidate-opt", o]
        if policy is not None:
            out += ["--policy", policy]
        elif quick:
            out += ["--policy", self.base_policy(quick)]
        if quick:
            out += ["--gates", self.quick_gates]
        return out


FAULT_CELLS = (
    SelftestCell("fused-norm-dtype", ("fused-norm-dtype",), ("dtype=bfloat16", "tp=2", "fused_norm=true"), ("startup",),
                 quick_gates="startup"),
    SelftestCell("optional-import", ("optional-import",), (), ("startup",), quick_gates="startup"),
    SelftestCell("eos-ignored", ("eos-ignored",), (), ("startup", "numerics", "golden"), quick_gates="startup,golden"),
    SelftestCell("tool-parser-partial", ("tool-parser-partial",), (), ("golden",), quick_gates="startup,golden"),
    SelftestCell("nan-residue", ("nan-residue",), (), ("numerics", "longctx")),
    SelftestCell("kv-stale-reuse", ("kv-stale-reuse",), (), ("longctx",)),
    SelftestCell("rope-drift", ("rope-drift",), (), ("numerics", "longctx")),
    SelftestCell("late-decode-corrupt", ("late-decode-corrupt=48",), (), ("golden", "longctx")),
    SelftestCell("tool-overflow", ("tool-overflow",), (), ("golden", "shadow")),
    SelftestCell("grammar-mask-misalign", ("grammar-mask-misalign",), (), ("golden", "longctx")),
    SelftestCell("sporadic-corruption", ("sporadic-corruption=0.03",), (), ("shadow",)),
    # Each flipped close call is a near tie at bf16's gap: gate 4 counts the confident ones, gate 5 the rate of the rest.
    SelftestCell("close-call-shift", ("close-call-shift=1",), ("dtype=bfloat16",), ("longctx", "shadow")),
    # The bundled pair runs gate 4's batch-features check on itself: the candidate's engine dies there.
    SelftestCell("seeded-batch-dies", ("seeded-batch-dies",), (), ("longctx",)),
    SelftestCell("decode-slowdown", ("decode-slowdown=23",), (), ("performance",)),
    # Its fallback lines are an unexplained path change (gate 1); once a policy explains them,
    # the cost is the performance gate's to measure.
    SelftestCell("silent-fallback", ("silent-fallback",), (), ("startup",)),
    SelftestCell("silent-fallback-explained", ("silent-fallback",), (), ("performance",),
                 explained=("naive fallback|falling back to a slower attention",)),
)
CLEAN_CELLS = tuple(SelftestCell(f"clean-seed{s}", seed=s, quick_gates="startup,golden" if s == 0 else "")
                    for s in range(CLEAN_SEEDS))


def cells(quick: bool) -> list[SelftestCell]:
    """The cells of the full selftest, or of the quick subset."""
    every = [*FAULT_CELLS, *CLEAN_CELLS]
    return [c for c in every if c.quick_gates] if quick else every


def uncovered() -> list[str]:
    """Bundled faults no cell exercises."""
    covered = {f.split("=")[0] for c in FAULT_CELLS for f in c.faults}
    return sorted(set(FAULTS) - covered)
