"""correctness.html's own pieces: the correctness table every report opens with (table.py), what
changed between the builds (what_changed.py) and the page's view (view.py). summary.md and
summary.json show the table and what changed too (run/)."""
