"""`gatekeeper bisect`: the first bad build between a good and a bad engine build.

`builds.py` reads the ordered build list; `search.py` is the search (pure: which build next, and
what the outcomes so far say); `step.py` judges one build with a real `gatekeeper run` of the
named checks' gates, the good build as the reference; `log.py` keeps every step in the output
directory so a bisect resumes; `report.py` writes its JSON, Markdown and HTML.
"""
