"""Gate 5: shadow traffic and canary, on recorded traffic (replay)."""
