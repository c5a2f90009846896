"""The pieces of gate 4 (long context and tool calling), one concept per module.

`tasks` is the single place the prompt formats of the task families are imported from;
`tokens` counts and steers prompt lengths; `scrape` reads a target's Prometheus metrics;
`prompts` builds needle prompts at exact lengths; `sessions` scripts the concurrent multi-turn
sessions; `decay` scores them; the check families live in `needle_grid`, `prefix_cache`,
`block_sweep`, `session_decay` and `tool_checks`, and the gate that runs them in order in
`gatekeeper/gates/longctx.py`.
"""
