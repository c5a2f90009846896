"""xgrammar beside llguidance on gk-tiny's tokenizer: set-up, schema compile and per-step mask time.

    pip install xgrammar transformers   # not dependencies of gatekeeper: only this comparison needs them
    python benchmarks/grammar_backends.py

Both are given the same JSON schema and walk the same valid answer token by token, computing the
next-token bitmask before each token; printed per backend: tokenizer set-up, schema compile, mask
p50 and max over the answer's tokens, and the size of what it installs. The engine uses
llguidance (`gatekeeper/engine/grammar.py` says why); a backend that is not installed is named
and skipped.
"""

from __future__ import annotations

import importlib.metadata
import json
import statistics
import time
from pathlib import Path

TOKENIZER = Path(__file__).resolve().parents[1] / "gatekeeper" / "models" / "gk-tiny" / "tokenizer.json"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                           "days": {"type": "integer", "minimum": 1, "maximum": 14},
                                           "units": {"enum": ["c", "f"]}},
          "required": ["city", "days", "units"], "additionalProperties": False}
ANSWER = json.dumps({"city": "Paris", "days": 3, "units": "c"})


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _report(name: str, init: float, compile_s: float, masks: list[float], tokens: int) -> None:
    print(f"{name:24s} set-up {_ms(init):>9s}  compile {_ms(compile_s):>8s}  mask p50 {statistics.median(masks) * 1e6:5.0f} µs"
          f"  max {max(masks) * 1e6:6.0f} µs  over {tokens} tokens")


def llguidance_run(ids: list[int], vocab: int) -> None:
    import llguidance
    import llguidance.torch as lt

    t0 = time.perf_counter()
    tok = llguidance.LLTokenizer(str(TOKENIZER), n_vocab=vocab)
    init = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = llguidance.LLMatcher(tok, llguidance.LLMatcher.grammar_from_json_schema(SCHEMA))
    compile_s = time.perf_counter() - t0
    bits, masks = lt.allocate_token_bitmask(1, vocab), []
    for tid in ids:
        t0 = time.perf_counter()
        lt.fill_next_token_bitmask(m, bits, 0)
        masks.append(time.perf_counter() - t0)
        assert m.consume_token(tid), m.get_error()
    _report(f"llguidance {importlib.metadata.version('llguidance')}", init, compile_s, masks, len(ids))


def xgrammar_run(ids: list[int], vocab: int) -> None:
    import xgrammar as xgr
    from transformers import PreTrainedTokenizerFast

    t0 = time.perf_counter()
    hf = PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER), eos_token="<|endoftext|>")
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(hf, vocab_size=vocab))
    init = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = xgr.GrammarMatcher(compiler.compile_json_schema(json.dumps(SCHEMA), any_whitespace=False))
    compile_s = time.perf_counter() - t0
    bits, masks = xgr.allocate_token_bitmask(1, vocab), []
    for tid in ids:
        t0 = time.perf_counter()
        m.fill_next_token_bitmask(bits)
        masks.append(time.perf_counter() - t0)
        assert m.accept_token(tid)
    _report(f"xgrammar {importlib.metadata.version('xgrammar')}", init, compile_s, masks, len(ids))


def main() -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    ids, vocab = tok.encode(ANSWER).ids, tok.get_vocab_size(with_added_tokens=True)
    print(f"gk-tiny tokenizer ({vocab} tokens); answer {ANSWER} is {len(ids)} tokens")
    for name, run in (("llguidance", llguidance_run), ("xgrammar", xgrammar_run)):
        try:
            run(ids, vocab)
        except ImportError as e:
            print(f"{name:24s} not installed ({e.name}): pip install {name}" + (" transformers" if name == "xgrammar" else ""))
    for dist in ("llguidance", "xgrammar", "triton", "apache-tvm-ffi"):
        try:
            files = importlib.metadata.files(dist) or []
            size = sum((f.size or 0) for f in files)
            print(f"installed: {dist} {importlib.metadata.version(dist)}, {size / 2**20:.0f} MiB")
        except importlib.metadata.PackageNotFoundError:
            pass


if __name__ == "__main__":
    main()
