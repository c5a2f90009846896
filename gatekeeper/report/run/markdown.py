"""summary.md: the verdict for a PR comment or a CI step summary ($GITHUB_STEP_SUMMARY).

A verdict line, the reasons, a table of gates, the checks that explain the verdict (FAIL,
ERROR, and SKIPs the policy treats as blocking) with their reasons, each linked to its place in
correctness.html; for a ROLLBACK, the first answer that differed, reference and candidate side by
side; then the longer tables folded in `<details>`, and links to the run's other report files:
relative (they sit beside summary.md, as CI artifacts do), or under the URL the run directory is
published at (`--report-url BASE`: `ReportData.links`), so that they work in a PR comment.
Model output and reasons can hold markdown or HTML, so cell text has `|`, `<`, `>`, `&`,
backticks, brackets, `*`, newlines and control characters neutralised, `@mentions` and `#123`
references defused (`md_cell`, `md_code`: safe_text.py), and long text is cut: PR comments are
limited to 65,536 characters.
"""

from __future__ import annotations

from urllib.parse import quote

from gatekeeper.evidence import TextPair
from gatekeeper.gates.shadow import checks as shadow_checks
from gatekeeper.report.correctness.what_changed import what_changed
from gatekeeper.report.header import provenance
from gatekeeper.report.identity import identify
from gatekeeper.report.performance.gate_table import performance_gate, seed_table
from gatekeeper.report.performance.summary import TargetPerformance
from gatekeeper.report.run.data import ReportData, limits_text
from gatekeeper.report.run.interface import Renderer
from gatekeeper.report.safe_text import md_cell, md_code
from gatekeeper.report.statuses import coverage_text
from gatekeeper.report_links import RELATIVE, ReportLinks
from gatekeeper.results import CheckResult, RunResult, Status, Verdict

MAX_LISTED_CHECKS = 40
MAX_LISTED_REASONS = 10
MAX_TOTAL_CHARS = 60_000  # GitHub rejects PR comments over 65,536 characters

_VERDICT_MARK = {Verdict.PROMOTE: "✅", Verdict.HOLD: "⚠️", Verdict.ROLLBACK: "❌"}
_STATUS_MARK = {
    Status.PASS: "✅ PASS",
    Status.WARN: "⚠️ WARN",
    Status.FAIL: "❌ FAIL",
    Status.SKIP: "⏭️ SKIP",
    Status.ERROR: "💥 ERROR",
}


def _explains_verdict(check: CheckResult, verdict: Verdict) -> bool:
    """FAIL and ERROR always; a blocking SKIP or undecided check only where it can decide the verdict (HOLD)."""
    if check.status in (Status.FAIL, Status.ERROR):
        return True
    return (check.status == Status.SKIP or check.undecided) and check.blocking and verdict == Verdict.HOLD


def check_link(check_id: str, links: ReportLinks = RELATIVE) -> str:
    """The check's id as a link to its place in correctness.html (beside summary.md, or under `links.base`)."""
    return f"[`{md_code(check_id)}`]({links.to('correctness.html', 'check-' + quote(check_id, safe='.-_'))})"


def _details(summary: str, lines: list[str]) -> list[str]:
    """`lines` folded under `summary` (GitHub renders markdown inside <details> after a blank line)."""
    return ["", f"<details><summary>{md_cell(summary)}</summary>", "", *lines, "", "</details>"]


def _excerpt(text: str, at: int | None, width: int = 240) -> str:
    """Up to `width` characters of `text` around `at` (the first difference), marked "…" where cut."""
    start = max(0, (at or 0) - width // 3)
    cut = text[start:start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(text) else "")


def first_difference(run: RunResult, links: ReportLinks = RELATIVE) -> list[str]:
    """For a ROLLBACK: the first blocking FAIL that kept both answers, side by side."""
    for c in (c for g in run.gates for c in g.checks if c.status == Status.FAIL and c.blocking):
        pair = next((e for e in c.evidence if isinstance(e, TextPair)), None)
        if pair is None:
            continue
        at = pair.divergence if pair.divergence is not None else \
            next((i for i, (a, b) in enumerate(zip(pair.reference, pair.candidate)) if a != b),
                 min(len(pair.reference), len(pair.candidate)))
        lines = ["", "### First differing answer", "", f"{check_link(c.id, links)}: {md_cell(pair.title)}"]
        if pair.prompt:
            lines += ["", f"Prompt: {md_cell(_excerpt(pair.prompt, len(pair.prompt), 200))}"]
        return lines + ["", f"| Reference | Candidate (differs from character {at}) |", "|---|---|",
                        f"| {md_cell(_excerpt(pair.reference, at))} | {md_cell(_excerpt(pair.candidate, at))} |"]
    return []


def _row_status(status: str) -> str:
    return _STATUS_MARK[Status(status)] if status in Status.__members__ else md_cell(status)


def _fmt(value: float | None, unit: str = "s") -> str:
    return "–" if value is None else f"{value:.3f} {unit}".strip()


def _perf_row(p: TargetPerformance) -> str:
    flag = "yes" if p.meaningful else f"no: {md_cell(p.not_meaningful_reason)}"
    tps = "–" if p.output_tokens_per_s is None else f"{p.output_tokens_per_s:.1f}"
    return (
        f"| {md_cell(p.role)} | {_fmt(p.startup_s)} | {_fmt(p.ttft_s.p50)} | {_fmt(p.e2e_s.p50)} "
        f"| {_fmt(p.e2e_s.p95)} | {tps} | {p.num_requests} | {flag} |"
    )


class MarkdownRenderer(Renderer):
    """summary.md: the verdict in GitHub-flavoured markdown, short enough for a PR comment."""

    name = "markdown"
    filename = "summary.md"

    def render(self, data: ReportData) -> str:
        """summary.md's text; its footer points to the run's other report files."""
        run = data.run
        v = run.verdict
        lines = [f"## gatekeeper: {_VERDICT_MARK[v]} {run.headline} (exit code {run.exit_code})", ""]
        who = identify(run.targets)
        if who is not None:
            lines += [f"**{md_cell(who.line)}**", ""]
        changed = what_changed(run)
        if changed is not None:  # the path's differences, then the candidate's new log warnings, as a list
            lines += ["What changed:", ""]
            lines += [f"  - `{md_code(line.strip())}`" if line.startswith("  ") else f"- {md_cell(line)}" for line in changed.lines]
            lines.append("")
        for t in run.targets:
            model = f" (model `{md_code(t.model)}`)" if t.model else ""
            lines.append(f"- **{md_cell(t.role)}**: {md_cell(t.description)}{model}")
        lines.append(f"- run `{md_code(run.run_id)}`, policy `{md_code(run.policy or '-')}`, seed {run.seed}")
        lines += [f"- {md_cell(line)}" for line in provenance(run)]
        lines += ["", "### Reasons", ""]
        lines += [f"- {md_cell(r)}" for r in run.reasons[:MAX_LISTED_REASONS]] or ["- none"]
        if len(run.reasons) > MAX_LISTED_REASONS:
            lines.append(f"- …and {len(run.reasons) - MAX_LISTED_REASONS} more (see summary.json)")
        limits = limits_text(run)
        if limits:
            lines += ["", "### What the blocking PASSes would have caught (the weakest first)", ""]
            lines += [f"- {md_cell(line)}" for line in limits]
        if run.hooks:
            lines += ["", "### Rollback hooks", ""]
            lines += [f"- {'ok' if h.ok else '**failed**'}: {h.kind} `{md_code(h.target)}` ({md_cell(h.detail)})" for h in run.hooks]

        lines += ["", "### Gates", "", "| Stage | Gate | Status | Judged | Pass | Warn | Fail | Skip | Error |"]
        lines.append("|---:|---|---|---|---:|---:|---:|---:|---:|")
        for g, n in data.gates():
            lines.append(
                f"| {g.stage} | {md_cell(g.title)} (`{md_code(g.id)}`) | {_STATUS_MARK[g.status]} | {md_cell(coverage_text(g.coverage))} "
                f"| {n[Status.PASS]} | {n[Status.WARN]} | {n[Status.FAIL]} | {n[Status.SKIP]} | {n[Status.ERROR]} |"
            )

        listed = [c for g in run.gates for c in g.checks if _explains_verdict(c, v)]
        if listed:
            lines += ["", "### Checks behind the verdict", "", "| Check | Status | Blocking | Reason |"]
            lines.append("|---|---|---|---|")
            for c in listed[:MAX_LISTED_CHECKS]:
                blocking = "blocking" if c.blocking else "advisory"
                lines.append(f"| {check_link(c.id, data.links)} | {_STATUS_MARK[c.status]} | {blocking} | {md_cell(c.reason)} |")
            if len(listed) > MAX_LISTED_CHECKS:
                lines += ["", f"…and {len(listed) - MAX_LISTED_CHECKS} more (see summary.json)."]
        if v == Verdict.ROLLBACK:
            lines += first_difference(run, data.links)

        if data.correctness:
            lines += _details(f"Correctness: {len(data.correctness)} dimensions", [
                "| Dimension | Metric | Threshold | Reference | Candidate | Judged | Status |", "|---|---|---|---|---|---|---|",
                *(f"| {md_cell(r.dimension)} | {md_cell(r.metric)} | {md_cell(r.threshold)} | {md_cell(r.reference)} "
                  f"| {md_cell(r.candidate)} | {md_cell(r.judged)} | {_row_status(r.status)} |" for r in data.correctness)])
        stages = [c for g in run.gates if g.id == shadow_checks.GATE for c in g.checks
                  if shadow_checks.is_stage(c) or shadow_checks.is_rule(c)]
        if stages:
            lines += _details("Shadow traffic: stages and rollback rules", [
                "| Check | Status | Reason |", "|---|---|---|",
                *(f"| {check_link(c.id, data.links)} | {_STATUS_MARK[c.status]} | {md_cell(c.reason)} |" for c in stages)])

        gate = performance_gate(run)
        if gate is not None:
            table = ["| Dimension | Metric | Baseline | Candidate | Candidate / baseline | Status |", "|---|---|---:|---:|---:|---|",
                     *(f"| {r.dimension} | {md_cell(r.metric)} | {r.baseline} | {r.candidate} | {r.ratio} | {r.status} |"
                       for r in seed_table(gate, run))]
            skipped = next((c for c in gate.checks if c.id.endswith(".not_run")), None)
            lines += _details(f"Performance gate: {gate.status.value}", table + ([] if skipped is None else ["", md_cell(skipped.reason)]))
        perf = data.performance
        if perf.targets:
            lines += _details("Performance as observed during the gates", [
                "| Target | Startup | TTFT p50 | E2E p50 | E2E p95 | Output tok/s | Requests | Meaningful |",
                "|---|---:|---:|---:|---:|---:|---:|---|", *(_perf_row(p) for p in perf.targets)])
        others = [name for name in data.report_files if name != self.filename]
        footer = "Full reports: " + ", ".join(f"[{name}]({data.links.to(name)})" for name in others) + ".\n"
        text = "\n".join(lines)
        if len(text) > MAX_TOTAL_CHARS:
            text = text[: text.rfind("\n", 0, MAX_TOTAL_CHARS)] + "\n\n…(cut to fit a PR comment)"
        return text + "\n\n" + footer
