"""One run's reports: its report data, built once (data.py), and the `Renderer`s of it
(interface.py) listed in registry.py — summary.json, junit.xml, summary.md and the two HTML
pages (pages.py, whose views come from correctness/ and performance/) — written by files.py."""
