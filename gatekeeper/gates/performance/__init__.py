"""The performance gate: interleaved A/B load against a named baseline, after correctness passed."""
