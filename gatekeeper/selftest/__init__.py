"""`gatekeeper selftest`: the built-in matrix of the bundled faults that shows each gate catching its bug class."""
