#!/usr/bin/env bash
# One release of llama-cpp-python (llama.cpp's Python bindings and OpenAI-compatible server) serving a
# checkpoint converted to GGUF, from a cached venv.
#
#   scripts/llama_cpp.sh VERSION                       # make the venv and the GGUF if needed, print the serve command
#   scripts/llama_cpp.sh VERSION --port PORT [ARG...]  # make them if needed, then exec the server on PORT
#
# Options before --port: --model DIR (a Hugging Face checkpoint; default: the shipped
# gatekeeper/models/gk-tiny), --served-model-name NAME (default gk-tiny). ARGs after --port PORT go to
# `python -m llama_cpp.server` as they are (a later `--n_threads 2` overrides the default below).
#
# As a launch target (cwd: the repository), the whole command is:
#   scripts/llama_cpp.sh 0.3.36 --port {port}
#
# The venv is ${GATEKEEPER_LLAMA_CACHE:-$HOME/.cache/gatekeeper/llama-cpp}/VERSION, made once:
# torch==2.13.0 CPU, transformers and sentencepiece (llama.cpp's converter imports them), then llama-cpp-python
# built from its sdist (about ten minutes on two cores), then the `gguf` package from the sdist's
# vendor/llama.cpp/gguf-py (the converter's own). The converter, convert_hf_to_gguf.py with its
# conversion/ package, is copied from the sdist into VERSION/converter. A finished venv carries a
# `.gatekeeper-ready` marker; a half-made one is made again; two callers asking for one version at
# once make it once (flock).
#
# The checkpoint is converted to an f32 GGUF once per (VERSION, digest of the checkpoint's files):
# VERSION.gguf/NAME-DIGEST.f32.gguf beside the venv. The converter identifies a BPE pre-tokenizer by
# the hash of its token ids on a probe text, so a tokenizer trained from scratch (gk-tiny's) is never
# recognised; when tokenizer.json's split regex is exactly Qwen2's, the pre-tokenizer is named `qwen2`,
# otherwise the conversion stops. Progress goes to stderr; an error exits 3 with one line.
set -euo pipefail
usage="usage: scripts/llama_cpp.sh VERSION [--model DIR] [--served-model-name NAME] [--port PORT [ARG...]]"
die() { echo "llama_cpp.sh: $*" >&2; exit 3; }
(($#)) || die "$usage"
version=$1
shift
here=$(cd -P "$(dirname "$0")/.." && pwd)  # -P: the repository, also through a symlinked scripts/
model=$here/gatekeeper/models/gk-tiny
served=gk-tiny
port=
while (($#)); do
  case $1 in
    --model) (($# >= 2)) || die "$usage"; model=$2; shift 2 ;;
    --served-model-name) (($# >= 2)) || die "$usage"; served=$2; shift 2 ;;
    --port) (($# >= 2)) || die "$usage"; port=$2; shift 2; break ;;
    *) die "unknown option $1; $usage" ;;
  esac
done
[[ $version =~ ^[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)$ ]] || die "not a release: $version"
[[ -f $model/config.json ]] || die "no checkpoint at $model (config.json missing)"
model=$(cd -P "$model" && pwd)
cache=${GATEKEEPER_LLAMA_CACHE:-$HOME/.cache/gatekeeper/llama-cpp}
venv=$cache/$version
py=${PYTHON:-python3}
log=$cache/.$version.log  # the pip and converter output; its tail is the error line when a step fails

# Runs a step with its output in $log; on failure exits 3 naming the step and the log's last line.
step() {
  local what=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    die "$what failed: $(grep -v '^\s*$' "$log" | tail -n 1) (whole log: $log)"
  fi
}

make_venv() {
  rm -rf "$venv"
  : >"$log"
  echo "llama_cpp.sh: making $venv (torch 2.13.0 CPU, transformers, llama-cpp-python==$version built from source: about 10 minutes on 2 cores)" >&2
  step "python -m venv" "$py" -m venv "$venv"
  local pip=("$venv/bin/pip" install --disable-pip-version-check)
  step "pip install torch" "${pip[@]}" torch==2.13.0 transformers sentencepiece
  mkdir -p "$venv/src"
  step "pip download llama-cpp-python==$version" "$venv/bin/pip" download --disable-pip-version-check --no-deps \
    --no-binary :all: -d "$venv/src" "llama-cpp-python==$version"
  local sdist
  sdist=$(ls "$venv"/src/llama_cpp_python-*.tar.gz 2>/dev/null | head -n 1)
  [[ -n $sdist ]] || die "pip download gave no llama_cpp_python sdist in $venv/src"
  local started=$SECONDS
  echo "llama_cpp.sh: building llama-cpp-python $version (log: $log)" >&2
  step "building llama-cpp-python $version" env CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "${pip[@]}" --no-binary llama-cpp-python "$sdist[server]"
  echo "llama_cpp.sh: built in $((SECONDS - started)) s" >&2
  step "unpacking the sdist" tar -xzf "$sdist" -C "$venv/src"
  local vendor
  vendor=$(ls -d "$venv"/src/llama_cpp_python-*/vendor/llama.cpp)
  [[ -f $vendor/convert_hf_to_gguf.py ]] || die "the sdist has no vendor/llama.cpp/convert_hf_to_gguf.py"
  step "pip install gguf" "${pip[@]}" "$vendor/gguf-py"
  mkdir -p "$venv/converter"
  cp "$vendor/convert_hf_to_gguf.py" "$venv/converter/"
  if [[ -d $vendor/conversion ]]; then cp -r "$vendor/conversion" "$venv/converter/"; fi  # the model classes, split out of the script in newer llama.cpp
  rm -rf "$venv/src"/llama_cpp_python-*/  # the unpacked tree (the sdist itself stays)
  "$venv/bin/python" -c "import llama_cpp, gguf, sys; print('llama_cpp.sh: llama-cpp-python', llama_cpp.__version__, 'ready', file=sys.stderr)" \
    || die "import llama_cpp failed in $venv"
  touch "$venv/.gatekeeper-ready"
}

# The converter with one addition: a BPE tokenizer it does not recognise by hash whose split regex is
# Qwen2's gets Qwen2's pre-tokenizer (see above).
read -r -d '' convert_py <<'EOF' || true
import json, runpy, sys
from pathlib import Path
converter, model_dir = Path(sys.argv[1]), Path(sys.argv[2])
QWEN2_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
def split_regexes(node):
    if isinstance(node, dict):
        if node.get("type") == "Split":
            yield (node.get("pattern") or {}).get("Regex")
        for child in node.get("pretokenizers") or []:
            yield from split_regexes(child)
tokenizer_json = model_dir / "tokenizer.json"
pre = json.loads(tokenizer_json.read_text()).get("pre_tokenizer") if tokenizer_json.exists() else None
sys.path.insert(0, str(converter))
import conversion.base as base  # noqa: E402
known = base.TextModel.get_vocab_base_pre
def get_vocab_base_pre(self, tokenizer):
    try:
        return known(self, tokenizer)
    except NotImplementedError:
        if list(split_regexes(pre)) == [QWEN2_SPLIT]:
            print("llama_cpp.sh: tokenizer.json splits with Qwen2's regex: pre-tokenizer qwen2", file=sys.stderr)
            return "qwen2"
        raise
base.TextModel.get_vocab_base_pre = get_vocab_base_pre
sys.argv = [str(converter / "convert_hf_to_gguf.py")] + sys.argv[3:] + [str(model_dir)]
runpy.run_path(sys.argv[0], run_name="__main__")
EOF

if [[ ! -f $venv/.gatekeeper-ready ]]; then
  mkdir -p "$cache"
  exec 9>"$cache/.$version.lock"
  flock 9
  [[ -f $venv/.gatekeeper-ready ]] || make_venv
  exec 9>&-
fi

digest=$(cd "$model" && find . -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
gguf_dir=$cache/$version.gguf
gguf=$gguf_dir/$(basename "$model")-$digest.f32.gguf
if [[ ! -f $gguf ]]; then
  mkdir -p "$gguf_dir"
  exec 9>"$gguf_dir/.lock"
  flock 9
  if [[ ! -f $gguf ]]; then
    echo "llama_cpp.sh: converting $model to $gguf (f32)" >&2
    [[ -d $venv/converter/conversion ]] || die "$venv/converter has no conversion/ package (a llama.cpp older than the script knows); remove $venv and run again"
    step "convert_hf_to_gguf.py" env NO_LOCAL_GGUF=1 HF_HUB_OFFLINE=1 "$venv/bin/python" -c "$convert_py" \
      "$venv/converter" "$model" --outtype f32 --outfile "$gguf.tmp"
    mv "$gguf.tmp" "$gguf"
  fi
  exec 9>&-
fi

# One thread per server unless the caller says otherwise (a later --n_threads/--n_threads_batch wins).
# llama.cpp's defaults are half the cores for decode and all of them for prompt batches, and its
# worker threads spin while they wait; a gatekeeper run keeps two to four servers up at once on two
# cores, and then they starve each other (scripts/vllm_cpu.sh has the same finding for vLLM's OpenMP threads).
# --interrupt_requests false: by default the server ends the stream it is serving (`data: [DONE]`, no
# finish_reason, the text cut) as soon as another request waits for the model, and gatekeeper sends
# 4-16 requests at once: most streamed answers would be cut. A later `--interrupt_requests true`
# serves with the server's default (gate 3 then judges the cuts as a rate: golden.stream_cuts).
# The chat template is the GGUF's own (tokenizer.chat_template; no --chat_format): none of the
# server's chat formats parses the `<tool_call>` text gk-tiny writes, so tool calls come back as text.
# OMP_NUM_THREADS=1 too (unless set): ggml's CPU backend runs its threads in OpenMP regions sized by
# --n_threads, and a launcher that sees no OMP_NUM_THREADS (gatekeeper's thread advice) cannot tell that.
env_vars=("OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
serve=("$venv/bin/python" -m llama_cpp.server --model "$gguf" --model_alias "$served" --n_ctx 2048
       --host 127.0.0.1 --n_threads 1 --n_threads_batch 1 --interrupt_requests false)
if [[ -z $port ]]; then
  echo "env ${env_vars[*]} ${serve[*]} --port {port}"
else
  exec env "${env_vars[@]}" "${serve[@]}" --port "$port" "$@"
fi
