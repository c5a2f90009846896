"""What a run's targets answered, kept: recorded per run (for `gatekeeper rejudge`) and, for the
reference, cached across runs (`--reference-cache`). See docs/rejudge.md."""
