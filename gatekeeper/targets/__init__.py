"""Targets: the engines under comparison — bundled, a URL, or a launched command."""
