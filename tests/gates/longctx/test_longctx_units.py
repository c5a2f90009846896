"""Gate 4's pure parts: length steering, SQDR and the decay tests over sessions, metrics parsing, trigger
conditions, exact-length fitting and the session script (no model needed)."""

from __future__ import annotations

import itertools
import random

import pytest

from gatekeeper.gates.longctx import conditions as cond
from gatekeeper.gates.longctx import tasks
from gatekeeper.gates.longctx.decay import Cell, one_cell_effect, score
from gatekeeper.stats.decay_rate import sqdr
from gatekeeper.results import Status
from gatekeeper.stats.holm import holm
from gatekeeper.gates.longctx.prompts import needle_prompts, padded_variants
from gatekeeper.gates.longctx.scrape import delta, parse, pool_tokens
from gatekeeper.gates.longctx.session_decay import decay_status
from gatekeeper.gates.longctx.sessions import SessionPlan, build_session, steer
from gatekeeper.gates.longctx.tokens import TokenCounter, estimate

METRICS = """# HELP vllm:prefix_cache_hits Prefix cache hits, in tokens.
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 1488.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 3400.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:cache_config_info{block_size="16",num_gpu_blocks="512",engine="0"} 1.0
"""


class CharTokenizer:
    """Stands in for an endpoint's /tokenize: one token per character plus 3 per message."""

    role = "reference"

    def tokenize(self, text=None, messages=None):
        return [0] * sum(len(m["content"]) + 3 for m in messages)


def test_steer_lands_at_and_around_block_boundaries():
    for prev, growth, offset in [(0, 100, -1), (96, 5, 0), (161, 200, 1), (500, 5, -1)]:
        n = steer(prev, growth, offset, 16, 10)
        assert n % 16 == offset % 16 and n >= prev + 10


def test_sqdr_is_first_minus_last_over_rounds():
    assert sqdr([1.0, 0.9, 0.5]) == (1.0 - 0.5) / 3
    assert sqdr([0.7]) == 0.0


def _cells(fail_from: int | None, sessions: int = 12, rounds: int = 12, flips: int = 0) -> list[Cell]:
    out = []
    for s in range(sessions):
        for r in range(1, rounds + 1):
            bad = (fail_from is not None and r >= fail_from) or (s < flips and r == rounds)
            out.append(Cell(session=s, round=r, tokens=100 * r, ref_ok=True, cand_ok=not bad, agree=not bad, ref_text="x",
                            cand_text="y" if bad else "x"))
    return out


def test_decay_of_a_stale_cache_is_significant_and_one_flip_is_not():
    fault = score(_cells(fail_from=5))
    assert fault.excess_slope > 0.005 and fault.p_value == 1 / 2**12 and fault.regressions == 12 * 8
    assert fault.recall_drop > 0.05 and fault.recall_p_value == 1 / 2**12
    flip = score(_cells(fail_from=None, flips=1))
    assert flip.excess > 0.005  # one unlucky answer at the last round crosses the raw SQDR threshold (docs/bug-classes.md#sqdr)...
    assert flip.excess_slope == pytest.approx(flip.one_cell) and flip.excess_slope < 0.005  # ...not the slope limit
    assert flip.p_value == 0.5  # and one session is never beyond chance
    clean = score(_cells(fail_from=None))
    assert clean.excess_slope == 0 and clean.p_value == 1.0 and clean.disagreements == 0


def test_sessions_are_the_unit_many_cells_of_one_session_are_not_significant():
    """Eight lost recalls in one session are one session's evidence, not eight samples: the
    pooled sign test gave p = 0.004 here; the permutation over sessions gives 0.5."""
    cells = [Cell(session=s, round=r, tokens=100 * r, ref_ok=True, cand_ok=not (s == 0 and r > 4),
                  agree=not (s == 0 and r > 4), ref_text="x", cand_text="x")
             for s in range(12) for r in range(1, 13)]
    d = score(cells)
    assert d.regressions == 8 and d.p_value == 0.5


def test_a_mid_session_collapse_that_recovers_has_zero_sqdr_but_is_seen_by_the_slopes():
    cells = [Cell(session=s, round=r, tokens=100 * r, ref_ok=True, cand_ok=r not in (6, 7, 8, 9, 10, 11), agree=True, ref_text="x",
                  cand_text="x") for s in range(12) for r in range(1, 13)]
    d = score(cells)
    assert d.excess == 0  # SQDR as docs/bug-classes.md#sqdr defines it: round 1 and round 12 are both recalled
    assert d.excess_slope > 0.005 and d.p_value == 1 / 2**12


def _missed(ref_miss: set[tuple[int, int]], cand_miss: set[tuple[int, int]]) -> list[Cell]:
    return [Cell(session=s, round=r, tokens=100 * r, ref_ok=(s, r) not in ref_miss, cand_ok=(s, r) not in cand_miss,
                 agree=((s, r) in ref_miss) == ((s, r) in cand_miss), ref_text="x", cand_text="x")
            for s in range(12) for r in range(1, 13)]


def test_a_steeper_slope_from_rounds_recalled_better_is_no_decay():
    """A declared bf16 build recalled two round-1 cells the reference missed and lost none: its
    slope read +0.0052/round against the 0.005 limit, undecided, and HOLDed a clean run. With no
    cell lost its recall is at least the reference's in every round: PASS, saying why. One cell
    lost late keeps the test's own answer (above the limit, within chance: undecided)."""
    better = score(_missed({(0, 1), (1, 1)}, set()))
    assert better.excess_slope > 0.005 and better.regressions == 0 and better.improvements == 2
    status, note = decay_status(better, 0.005, better.p_value, 0.01)
    assert status is Status.PASS and note.startswith("no decay") and "(2 more)" in note
    lost = score(_missed({(0, 1), (1, 1)}, {(2, 12)}))
    assert lost.excess_slope > 0.005 and lost.regressions == 1 and lost.p_value > 0.01
    assert decay_status(lost, 0.005, lost.p_value, 0.01) == (Status.WARN, "")
    decaying = score(_cells(fail_from=5))
    assert decay_status(decaying, 0.005, decaying.p_value, 0.01) == (Status.FAIL, "")


def test_one_cell_effect_matches_the_scored_bound():
    d = score(_cells(fail_from=None, flips=1))
    assert d.one_cell == pytest.approx(one_cell_effect(12, 12)) == pytest.approx(6 / (12 * 13 * 12))


def test_holm_adjusts_the_family():
    assert holm([0.004, 0.03]) == [0.008, 0.03]
    assert holm([0.03, 0.004, 0.5]) == [pytest.approx(0.06), pytest.approx(0.012), 0.5]
    assert holm([0.6, 0.6]) == [1.0, 1.0]


def test_prometheus_text_is_parsed_with_vllm_names():
    before = parse(METRICS)
    after = parse(METRICS.replace("1488.0", "2000.0"))
    assert before.get("vllm:prefix_cache_hits") == 1488.0
    assert delta(before, after, "vllm:prefix_cache_hits") == 512.0
    assert pool_tokens(before, 16) == 512 * 16
    assert not parse("").available


def test_conditions_name_what_was_absent():
    one = cond.concurrency(1, 12, None)
    assert one.present is False and "more than 8" in one.detail
    off = cond.prefix_caching(0.0, 5000.0, None)
    assert off.present is False and "0 of 5000" in off.detail
    assert cond.prefix_caching(None, None, None).present is None
    assert cond.eviction_pressure(1600, 8192, None, None).present is False
    assert cond.eviction_pressure(17000, 8192, 900.0, 0.97).present is True
    crossing = cond.block_boundaries([[255, 256, 257], [300]], 16)
    assert crossing.detail.startswith("3 of 4") and "1 block boundaries crossed" in crossing.detail
    assert cond.uneven_growth([12, 100, 200]).present and not cond.uneven_growth([100, 110]).present


def test_fit_reaches_exact_lengths_with_a_measured_pad_unit():
    counter = TokenCounter(CharTokenizer())  # type: ignore[arg-type]
    assert counter.pad_units() == (" a", 2, ".")  # " the" is four tokens here, " a" two, "." one
    assert counter.pad(5) == " a a." and counter.pad(0) == ""
    prompts = needle_prompts(counter, random.Random(0), 300, [0.0, 0.5, 1.0])
    assert [p.tokens for p in prompts] == [300, 300, 300] and all(p.exact for p in prompts)
    assert all(p.value in p.messages[-1]["content"] for p in prompts)
    triple = padded_variants(counter, random.Random(1), 512, [-1, 0, 1])
    assert [p.tokens for p in triple] == [511, 512, 513]
    assert triple[0].messages[-1]["content"][:400] == triple[2].messages[-1]["content"][:400]  # shared prefix


def test_estimated_counts_are_flagged():
    counter = TokenCounter(None)
    assert counter.estimated and "no target" in counter.why_estimated
    assert counter.count([{"role": "user", "content": "x" * 40}]) == estimate([{"role": "user", "content": "x" * 40}])


def test_sessions_are_identical_requests_with_canonical_history():
    counter = TokenCounter(CharTokenizer())  # type: ignore[arg-type]
    plan = SessionPlan(sessions=2, rounds=8, facts=3, growth=(100, 5, 200), block_size=16, max_tokens=2000)
    a = build_session(counter, plan, seed=7, index=1)
    b = build_session(counter, plan, seed=7, index=1)
    assert [r.messages for r in a] == [r.messages for r in b]  # deterministic in (seed, index)
    for prev, cur in itertools.pairwise(a):
        assert cur.messages[:len(prev.messages) - 1] == prev.messages[:-1]  # history only grows
        assert cur.tokens > prev.tokens
    assert all(r.tokens % 16 in (15, 0, 1) for r in a if r.exact)
    for r in a:
        planted = " ".join(m["content"] for m in r.messages[:-1])
        assert r.answer in planted and r.messages[-1]["content"] == tasks.fact_question(r.slot)


def test_json_sample_exposes_its_schema():
    prompt, schema, expected = tasks.json_sample(random.Random(3), 3)
    assert schema["required"] == list(expected) and "JSON schema" in prompt


def test_heatmap_evidence_renders_as_an_svg_grid():
    from gatekeeper.report.evidence_view import evidence_view
    from gatekeeper.evidence import from_json

    view = evidence_view(from_json("heatmap", "needle grid", {
        "rows": ["256 tokens", "2000 tokens"], "columns": ["depth 0", "depth 1"],
        "values": [[1.0, None], [0.0, 1.0]], "labels": [["✓ ✓", "✗ ✗"], ["✓ ✗ regression", "✓ ✓"]]}))
    assert view.kind == "chart"
    svg = str(view.chart)
    assert svg.count("<rect") == 4 and "✓ ✗ regression" in svg and "#bbbbbb" in svg


def test_watched_candidate_asks_for_logprobs_and_counts_nan():
    from gatekeeper.gates.longctx.traffic import Watched
    from gatekeeper.endpoints.responses import ChatResponse, TokenLogprob

    class Fake:
        role = "candidate"

        def __init__(self):
            self.kw = {}

        def chat(self, messages, **kw):
            self.kw = kw
            poisoned = "poison" in messages[0]["content"]
            lp = (TokenLogprob("!", float("nan")),) * 2 if poisoned else (TokenLogprob("OK", -0.1),)
            return ChatResponse(text="!!" if lp[0].token == "!" else "OK", logprobs=lp)

    fake = Fake()
    w = Watched(fake, logprobs=True)  # type: ignore[arg-type]
    w.chat([{"role": "user", "content": "fine"}], max_tokens=4)
    assert fake.kw["logprobs"] is True and w.role == "candidate"
    w.chat([{"role": "user", "content": "poison"}], max_tokens=4)
    assert (w.answers, w.answers_hit, w.non_finite, w.example) == (2, 1, 2, "!!")


def test_reference_noise_floor_marks_answers_it_does_not_repeat():
    from gatekeeper.gates.longctx.traffic import unstable
    from gatekeeper.stats.noise import ask_twice
    from gatekeeper.endpoints.responses import ChatResponse

    calls: list[int] = []

    def ask(i: int) -> ChatResponse:
        calls.append(i)
        return ChatResponse(text="x" if i != 2 or calls.count(2) == 1 else "y")  # item 2 flips on its second ask

    passes = ask_twice(ask, [0, 1, 2], concurrency=1, noise_floor_concurrency=1)
    first, second = passes.first, passes.second
    assert unstable(first, second) == [False, False, True]
    assert calls == [0, 1, 2, 2, 1, 0]  # the second pass goes in the reverse order
    assert ask_twice(ask, [0], concurrency=4, noise_floor_concurrency=0).second is None
    assert unstable(first, None) == [False, False, False]


def test_the_decay_tests_false_alarm_rate_is_what_the_policy_says():
    """Null runs (the candidate is the reference, cells of a session dependent): the Holm family's
    false-alarm rate is not above alpha (binomial test), while the pooled sign test over cells,
    which treats dependent cells as independent, is far above it."""
    from scipy.stats import binomtest

    from gatekeeper.gates.longctx.decay_null import simulate

    r = simulate(300, 12, 12, alpha=0.05, limit=0.005, recall_limit=0.05, stickiness=0.8, seed=3)
    assert binomtest(r.test_alarms, r.runs, 0.05, alternative="greater").pvalue > 0.01, r
    assert r.gate_alarms <= r.test_alarms
    assert r.pooled_alarms > 2 * r.test_alarms and r.pooled_alarms / r.runs > 0.1, r
