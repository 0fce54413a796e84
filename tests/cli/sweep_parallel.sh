#!/usr/bin/env bash
# `dtsim sweep --emit DIR`, its jobs run by GNU parallel, then `--collect DIR`: the same CSV as the
# sweep run in place with -j 2. Usage: sweep_parallel.sh DTSIM OUT_DIR. Exit 77 (skipped) without
# GNU parallel.
set -euo pipefail
dtsim=$1
out=$2
command -v parallel >/dev/null || { echo "SKIPPED: GNU parallel is not installed (tools/test installs it)"; exit 77; }
rm -rf "$out" && mkdir -p "$out"
grid=(--vary cluster.nic.gbps=100,400 --vary strategy.bucket_cap_mb=10,50 --set training.compute.single_gpu_throughput=367
      --set gpus=16)
"$dtsim" sweep scenarios/imagenet-resnet50-32gpu.json "${grid[@]}" -j 2 --csv "$out/direct.csv" >/dev/null
"$dtsim" sweep scenarios/imagenet-resnet50-32gpu.json "${grid[@]}" --emit "$out/emitted"
[ "$(wc -l <"$out/emitted/jobs.txt")" -eq 4 ] || { echo "FAIL: expected 4 jobs"; exit 1; }
bash -n "$out/emitted/slurm.sh"
parallel --will-cite -j 2 <"$out/emitted/jobs.txt"
"$dtsim" sweep --collect "$out/emitted" --csv "$out/collected.csv" >/dev/null
cmp "$out/direct.csv" "$out/collected.csv" || { echo "FAIL: collected results differ from the direct sweep"; diff "$out/direct.csv" "$out/collected.csv"; exit 1; }
cat "$out/collected.csv"
echo "OK: 4 points run by GNU parallel, collected CSV identical to the direct sweep"
