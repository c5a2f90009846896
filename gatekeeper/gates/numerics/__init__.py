"""Gate 2 — numerical consistency: `gate.py` runs it, `settings.py` holds its defaults and
per-dtype tolerances, `stats.py` compares two targets' teacher-forced scores position by position."""
