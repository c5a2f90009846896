"""Statistics shared by the gates: `noise.py` (the reference's noise-floor pass), `near_tie.py`
(is a greedy divergence a near tie or a regression), `holm.py` (family-wise control over a gate's
tests), `quantiles.py` (the one percentile definition), `decay_rate.py` (a session's quality
decay rate). A gate's own statistics live in its package (gate 5's in `gatekeeper/traffic/`)."""
