"""Click parameter types the commands share: a float range that is also finite.

click's `FloatRange` lets `nan` through (every comparison with NaN is false), so `--timeout nan`
would reach a request as a deadline no clock reaches. `Finite` refuses NaN (infinities already
fall outside any bounded range) with click's own one-line usage error, exit 3.
"""

from __future__ import annotations

import math
from typing import Any

import click


class Finite(click.FloatRange):
    """A bounded float range that refuses NaN."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The float, or a usage error for NaN or a value out of range."""
        rv = super().convert(value, param, ctx)
        if isinstance(rv, float) and math.isnan(rv):
            self.fail(f"{value!r} is not a number", param, ctx)
        return rv
