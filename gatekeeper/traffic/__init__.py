"""Recorded traffic: the JSONL format gate 5 replays (docs/traffic-format.md), its loader, the
importers from formats users already have, and the generator of the shipped sample."""
