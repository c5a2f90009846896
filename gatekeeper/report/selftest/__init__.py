"""The selftest's pages (`gatekeeper selftest`): data.py holds the `SelftestResult` the selftest
hands over (written as selftest.json); view.py renders selftest.html."""
