"""gatekeeper: a correctness gate for upgrades of LLM inference engines."""

__version__ = "0.1.0"
