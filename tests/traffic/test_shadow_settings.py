"""Gate 5's settings carry the analysis' thresholds: declared once (analysis.Thresholds), their
defaults and the policy's values reach the analysis by field name."""

from __future__ import annotations

from dataclasses import fields

from gatekeeper.traffic.analysis import Thresholds
from gatekeeper.traffic.settings import ShadowSettings


def test_the_settings_default_to_the_analysis_thresholds():
    assert ShadowSettings().thresholds() == Thresholds()


def test_every_threshold_the_policy_sets_reaches_the_analysis():
    s = ShadowSettings(alpha=0.01, primary_share=0.3, noise_relative=0.1, confidence=0.9, similarity_tolerance=0.05,
                       length_tolerance=0.5, score_pass=80.0, score_marginal=40.0, materiality={"error": 0.05},
                       slice_weights={"tenant=acme": 4.0}, slice_reserve=0.1)
    t = s.thresholds()
    assert {f.name: getattr(t, f.name) for f in fields(Thresholds)} == {f.name: getattr(s, f.name) for f in fields(Thresholds)}
    assert t != Thresholds() and all(getattr(t, f.name) != getattr(Thresholds(), f.name) for f in fields(Thresholds))
