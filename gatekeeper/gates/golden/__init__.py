"""Gate 3 — golden prompts: `gate.py` runs it, `settings.py` holds its defaults, `judge.py` judges
one case against the reference, `pass_rates.py` summarises pass rates by family, `checks.py` holds
its check ids and what each check found (the findings the gate records and the report reads)."""
