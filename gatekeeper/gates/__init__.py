"""The staged gates. Each gate is one file; `registry.py` lists them in stage order."""
