"""Gate 3 — golden prompts: `gate.py` runs it, `settings.py` holds its defaults, `judge.py` judges
one case against the reference, `pass_rates.py` summarises pass rates by family."""
