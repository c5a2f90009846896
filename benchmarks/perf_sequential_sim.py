"""The primary figure's sequential test over simulated launch rounds: the rows real launches here
cannot give (a stale calibration, a GPU-like engine) beside the quiet and uncalibrated ones.

    python benchmarks/perf_sequential_sim.py [--runs 400] [--pair-sd 0.10] [--tau 0.01] [--round-pairs 16] [--rounds 3 12]

Each simulated run goes round by round through the gate's own test (`perf/sequential.py`,
designed from the default policy: materiality, error rates, `round_pairs`, `rounds`) until it
stops. A round is one fresh launch per side — each off by N(0, τ) in log figure — and
`round_pairs` block pairs with normal log-ratio noise of sd `--pair-sd` (default 10%: the c1
block pairs of clean bundled runs on this VM, 2026-12-04, `performance.primary`'s `pair_sd`).
`--tau` is the machine's true launch spread (default 1%: `gatekeeper perf calibrate`'s estimate
here; the gate uses the calibration's 90% upper bound, about 2% from 10 A/A pairs).

Rows (FAIL / PASS / HOLD shares, rounds median and p90, minutes at the measured ~5 s per launch
pair plus 1.1 s per block pair; `ratio`: the mean over runs of the final candidate/baseline ratio
less 1, and `in FAIL` the same over the runs that FAILed — what a table of FAILed runs' realised
cost reads, biased upward by stopping early on a high estimate):
- quiet calibrated / uncalibrated (the policy's assumed τ 2.5%): clean and a 5% regression;
- busy, stale calibration: the machine got noisier (τ 2.5%, pair sd × 1.3) but the gate still
  holds the quiet calibration — the rounds' own variance and the noise check must keep false
  FAILs at α;
- GPU-like engine: wall clock 5% slower, CPU time unchanged (a kernel regression the host's CPU
  does not see) — the primary (wall clock) FAILs it; a CPU-time primary would PASS it, shown as
  the same test run on the CPU figure.

Measured 2026-12-04 (300 runs a row, pair sd 10%, τ 1%, the gate's τ 2%): quiet calibrated clean
0.3% FAIL / 99.0% PASS / 0.7% HOLD, median 4 rounds (p90 7), ~1.5 min; 5% slower 99.0% FAIL;
uncalibrated clean 0% / 97% / 3%, median 5 rounds; busy with a stale quiet calibration clean
2.3% FAIL / 84% PASS / 13% HOLD (the guard slows it down instead of failing), 5% slower 83%
FAIL; GPU-like 99% FAIL on wall clock where CPU time PASSes it 98.7%.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from dataclasses import dataclass

from gatekeeper.gates.performance.settings import PerformanceSettings
from gatekeeper.perf.sequential import Design, Outcome, Round, evaluate

LAUNCH_S, PAIR_S = 5.0, 1.1  # measured: a launch pair with warm-up, one c1 block pair (8 requests of 32 tokens)


@dataclass(frozen=True)
class Machine:
    """The truth a simulated run measures: launch spread, pair noise, and the τ the gate holds."""

    tau: float
    pair_sd: float
    tau_gate: float


def one_run(rng: random.Random, slower: float, machine: Machine, s: PerformanceSettings):
    """Rounds until the test stops; the last state."""
    design = Design(s.materiality, s.primary_alpha, 1 - s.primary_power, machine.tau_gate, s.rounds[0], s.rounds[1])
    rounds: list[Round] = []
    while True:
        offset = rng.gauss(0, machine.tau) - rng.gauss(0, machine.tau)
        rounds.append(Round(tuple(math.log1p(slower) + offset + rng.gauss(0, machine.pair_sd)
                                  for _ in range(s.round_pairs))))
        state = evaluate(rounds, design)
        if state.outcome is not Outcome.CONTINUE:
            return state


def row(label: str, slower: float, machine: Machine, s: PerformanceSettings, runs: int, seed: int) -> None:
    """One printed row: outcome shares, rounds, minutes."""
    rng = random.Random(seed)
    states = [one_run(rng, slower, machine, s) for _ in range(runs)]
    share = {o: sum(st.decided is o for st in states) / runs for o in (Outcome.FAIL, Outcome.PASS)}
    rounds = sorted(st.rounds for st in states)
    minutes = [(LAUNCH_S + PAIR_S * s.round_pairs) * r / 60 for r in rounds]
    failed = [st.ratio - 1 for st in states if st.decided is Outcome.FAIL]
    realised = f"{statistics.fmean(failed):+7.2%}" if failed else f"{'-':>7s}"
    print(f"{label:44s} {share[Outcome.FAIL]:6.1%} {share[Outcome.PASS]:6.1%} {1 - sum(share.values()):6.1%} "
          f"{statistics.median(rounds):6.1f} {rounds[int(0.9 * (runs - 1))]:4d} {statistics.median(minutes):6.2f} "
          f"{statistics.fmean(st.ratio - 1 for st in states):+7.2%} {realised}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--pair-sd", type=float, default=0.10)
    ap.add_argument("--tau", type=float, default=0.01)
    ap.add_argument("--tau-bound", type=float, default=0.02, help="the calibrated τ the gate uses (90%% upper bound)")
    ap.add_argument("--round-pairs", type=int, default=None, help="the policy's round_pairs (default: the default policy's)")
    ap.add_argument("--rounds", type=int, nargs=2, default=None, metavar=("FEWEST", "MOST"),
                    help="the policy's rounds (default: the default policy's)")
    a = ap.parse_args()
    s = PerformanceSettings(**({"round_pairs": a.round_pairs} if a.round_pairs else {}),
                            **({"rounds": list(a.rounds)} if a.rounds else {}))
    quiet = Machine(a.tau, a.pair_sd, a.tau_bound)
    uncalibrated = Machine(a.tau, a.pair_sd, s.launch_spread)
    busy_stale = Machine(0.025, a.pair_sd * 1.3, a.tau_bound)
    busy_known = Machine(0.025, a.pair_sd * 1.3, 0.035)
    print(f"{s.round_pairs} pairs a round, rounds {s.rounds[0]}–{s.rounds[1]}, materiality {s.materiality:.0%}, "
          f"pair sd {a.pair_sd:.1%}, τ {a.tau:.1%} (gate's calibrated {a.tau_bound:.1%}), {a.runs} runs a row\n")
    print(f"{'scenario':44s} {'FAIL':>6s} {'PASS':>6s} {'HOLD':>6s} {'rounds':>6s} {'p90':>4s} {'min':>6s} "
          f"{'ratio':>7s} {'in FAIL':>7s}")
    row("quiet, calibrated: clean", 0.0, quiet, s, a.runs, 1)
    row("quiet, calibrated: 5% slower", s.materiality, quiet, s, a.runs, 2)
    row("quiet, calibrated: 2.5% slower (indifference)", s.materiality / 2, quiet, s, a.runs, 3)
    row("quiet, uncalibrated (τ 2.5% assumed): clean", 0.0, uncalibrated, s, a.runs, 4)
    row("quiet, uncalibrated: 5% slower", s.materiality, uncalibrated, s, a.runs, 5)
    row("busy, stale quiet calibration: clean", 0.0, busy_stale, s, a.runs, 6)
    row("busy, stale quiet calibration: 5% slower", s.materiality, busy_stale, s, a.runs, 7)
    row("busy, calibrated under load: clean", 0.0, busy_known, s, a.runs, 8)
    row("GPU-like, wall clock 5% slower: primary", s.materiality, quiet, s, a.runs, 9)
    # CPU seconds per token scattered as much as wall clock in this VM's c1 pairs: the same machine
    row("GPU-like, the same on CPU time (unchanged)", 0.0, quiet, s, a.runs, 10)


if __name__ == "__main__":
    main()
