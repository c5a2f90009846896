"""`gatekeeper compare RUN_A RUN_B`: two finished runs side by side.

`load` reads a run directory into typed values, `diff` compares two of them (a pure function to
a frozen `RunComparison`), `render` shows the comparison on the console, in compare.md and in
compare.html. The command itself is gatekeeper/commands/compare.py.
"""
