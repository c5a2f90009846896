"""Texts that tokenize differently when a loader's pre-tokenizer differs from Qwen2's (whitespace
runs, CRLF, CJK, contractions, combining marks, ChatML specials): the bundled engine,
`tokenizers` and `AutoTokenizer` (tests/engine/test_tokenizer_loaders.py) and vLLM's /tokenize
(tests/targets/test_vllm.py) must give the same ids for each."""

CORPUS = [
    "x  an this",
    "Reply with exactly: OK",
    "def add(a, b):\n    return a + b\n\n\nclass X:\n\tpass\n",
    "  leading spaces and trailing   ",
    "tabs\t\tand\u00a0no-break spaces \u3000ideographic",
    "line one\r\nline two\n\n  indented after a blank line",
    "digits 0123456789 and 3.14159, -42, 1e-9, 1,000,000",
    "你好，世界。こんにちは。안녕하세요 Привет, мир! 🙂👍🏽",
    "I'm sure they've said it's what we'd do; DON'T SHOUT, you'LL see",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>',
    "punctuation!!! ...?? (nested [brackets] {here}) --- ***\n\n",
    "e\u0301 composed vs \u00e9 precomposed, Å vs A\u030a",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "",
    " ",
    "\n",
]
