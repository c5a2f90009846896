"""Gate 4 — long context and tool calling, one concept per module.

`gate.py` runs the check families in order; `settings.py` holds the defaults. `tasks` is the
single place the prompt formats of the task families are imported from; `tokens` counts and
steers prompt lengths; `scrape` reads a target's Prometheus metrics; `prompts` builds needle
prompts at exact lengths; `sessions` scripts the concurrent multi-turn sessions; `decay` scores
them; `traffic` sends the same requests to both targets; the check families live in
`needle_grid`, `prefix_cache`, `block_sweep`, `session_decay`, `tool_checks` and `json_checks`
(the chat before a tool or JSON case from `history`; lost cases reviewed by `tool_review`).
"""
