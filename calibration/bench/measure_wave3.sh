#!/usr/bin/env bash
# Two measurements on a one-GPU machine, for issues 30 (memory) and 32 (the host's load curve), in
# one short session (about 7 minutes): the raw results land flat in OUTDIR.
#
#   calibration/bench/measure_wave3.sh OUTDIR
#
#   machine.txt                          nvidia-smi -q, nvidia-smi, lscpu, free, versions
#   memory_peaks.json, memory_peaks.txt  memory_peaks.py: peak GPU memory of single-GPU training
#   host_loadcurve.json, .txt            host_costs.py --only loadcurve
#   steps.txt                            each step's exit code and seconds
#
# Each step has its own time limit (MEMORY_SECONDS, default 270; LOADCURVE_SECONDS, default 165);
# a step that fails is logged and the next one still runs. python3 must hold torch, torchvision and
# transformers (models are built from configs: nothing is downloaded).
set -u
out=${1:?usage: measure_wave3.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
steps="$out/steps.txt"
: >"$steps"
export PYTHONUNBUFFERED=1

step() {   # step NAME LIMIT STDOUT-FILE COMMAND...
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$SECONDS
  echo "== $name (limit ${limit}s): $*"
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$out/$log"
  local rc=${PIPESTATUS[0]}
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$steps"
}

t_machine=$SECONDS
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  uname -a
  echo "== git"
  git -C "$here" rev-parse HEAD 2>&1 | head -1
  git -C "$here" status --short -- . 2>&1 | head -20
  echo "== python"
  timeout 60 python3 -c 'import sys, torch, torchvision, transformers, PIL; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); print("torchvision", torchvision.__version__, "transformers", transformers.__version__, "pillow", PIL.__version__)' 2>&1 | tail -5
  echo "== nvidia-smi"
  nvidia-smi 2>&1
  echo "== nvidia-smi -q"
  nvidia-smi -q 2>&1
  echo "== lscpu"
  lscpu 2>&1
  echo "== nproc / affinity"
  nproc 2>&1
  taskset -pc $$ 2>&1
  echo "== free -g"
  free -g 2>&1
  echo "== cgroup cpu"
  cat /sys/fs/cgroup/cpu.max 2>&1
  cat /proc/loadavg 2>&1
} >"$out/machine.txt" 2>&1
echo "machine rc=0 seconds=$((SECONDS - t_machine))" | tee -a "$steps"

step memory "${MEMORY_SECONDS:-270}" memory_peaks.txt \
  python3 "$here/memory_peaks.py" -o "$out/memory_peaks.json" --budget-s "${MEMORY_BUDGET:-190}" --config-timeout-s 60
step loadcurve "${LOADCURVE_SECONDS:-165}" host_loadcurve.txt \
  python3 "$here/host_costs.py" --only loadcurve -o "$out/host_loadcurve.json"
rm -f "$out"/*.tmp
cat "$steps"
ls -la "$out"
