"""Gate 1 — startup: `gate.py` runs it, `logs.py` compares startup logs, `settings.py` holds its defaults."""
