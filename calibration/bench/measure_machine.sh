#!/usr/bin/env bash
# Runs the whole calibration suite on the GPU machine it is started on and leaves the raw results
# in OUTDIR: what `dtsim calibrate` reads, plus the machine's description.
#
#   calibration/bench/measure_machine.sh OUTDIR [BINDIR]
#
# BINDIR holds dtsim-bench-link, dtsim-bench-nccl and dtsim-bench-compute (default build/calibration).
# Each step has its own time limit; a step that fails is logged in OUTDIR/steps.txt and the others
# still run. Python steps use the python3 on PATH (torch, torchvision; scikit-image for the loader's
# photographs). STEP_SECONDS (default 240) bounds each step.
set -u
out=${1:?usage: measure_machine.sh OUTDIR [BINDIR]}
bin=${2:-build/calibration}
here=$(cd "$(dirname "$0")" && pwd)
limit=${STEP_SECONDS:-240}
mkdir -p "$out"
steps="$out/steps.txt"
: >"$steps"

step() {   # step NAME STDOUT-FILE COMMAND...
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  echo "== $name: $*" >&2
  timeout "$limit" "$@" >"$out/$log" 2>"$out/$name.err"
  local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$steps" >&2
  [ -s "$out/$name.err" ] || rm -f "$out/$name.err"
}

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  uname -a
  nvidia-smi -q 2>&1 | grep -E "Product Name|Driver Version|CUDA Version|VBIOS|Bus Id|Max Clocks|Graphics|SM  |Memory  |Power Limit|Max Power|Link Width|PCIe Generation|Max  |Current  " | head -40
  nvidia-smi topo -m 2>&1
  nvidia-smi nvlink -s 2>&1 | head -20
  lscpu 2>&1 | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)|MHz"
  free -g
} >"$out/machine.txt" 2>&1

step link link.txt "$bin/dtsim-bench-link" --json "$out/link.json"
step compute compute.txt "$bin/dtsim-bench-compute" --json "$out/compute.json"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -ge 2 ]; then
  step nccl nccl.txt "$bin/dtsim-bench-nccl" --ops all -b 8 -e 1G -f 2 --json "$out/nccl.json"
  step nccl_protos nccl-protos.txt "$bin/dtsim-bench-nccl" --ops all_reduce -b 8 -e 1G -f 4 \
    --algos Ring,Tree --protos LL,LL128,Simple
else   # one rank: only the launch overhead of a collective is measurable
  step nccl nccl.txt "$bin/dtsim-bench-nccl" --ops all_reduce -b 8 -e 1M -f 4 --json "$out/nccl.json"
fi
step profile_amp resnet50-profile-amp-b256.txt python3 "$here/profile_model.py" resnet50 --batch 256 \
  --precision amp -o "$out/resnet50-profile-amp-b256.json"
step profile_fp32 resnet50-profile-fp32-b128.txt python3 "$here/profile_model.py" resnet50 --batch 128 \
  --precision fp32 -o "$out/resnet50-profile-fp32-b128.json"
step host_costs host_costs.txt python3 "$here/host_costs.py" -o "$out/host_costs.json"
cat "$steps"
