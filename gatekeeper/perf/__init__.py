"""Performance measurement: the load generator, its figures, the A/B design and the history of runs."""
