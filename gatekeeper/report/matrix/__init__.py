"""The merged matrix's pages (`gatekeeper report merge`): data.py holds the `MergedMatrix` the
merge hands over; markdown.py, junit.py and view.py render summary.md, junit.xml and merged.html;
files.py writes them with merged.json and each cell's record through the report package's writer."""
