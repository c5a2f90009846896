"""The one percentile definition agrees with numpy's default (linear) method to the bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.stats.quantiles import percentile

values = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=60)
qs = st.sampled_from([0, 1, 5, 25, 50, 90, 95, 99, 99.9, 100])


@settings(max_examples=300, deadline=None)
@given(values, qs)
def test_percentile_is_numpys_linear_percentile_to_the_bit(xs, q):
    assert percentile(xs, q) == float(np.percentile(xs, q))


def test_no_values_have_no_percentile():
    assert percentile([], 50) is None
