"""Execution-path matrices: cells, plans, cell runs, the merged report and its localisation."""
