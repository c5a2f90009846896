"""The HTTP edge: everything that talks to an OpenAI-compatible server, and nothing that judges.

`client.py` (the `Endpoint`: chat, completions, scoring, tokenize, GETs, with classified errors),
`wire.py` (request bodies and the SSE stream parser), `responses.py` (the parsed answers),
`probe.py` (what a server supports, one request per feature: a `gatekeeper.capabilities`
value), `retry.py` (transient-failure retries), `fanout.py` (many requests at a bounded
concurrency).
"""
