#!/usr/bin/env bash
# Renders `dtsim report`'s page in headless Chromium (a real browser, no network): the PNG is kept
# for people to look at, the DOM after load must show every chart drawn and no script error (the
# page's own check sets data-charts, data-charts-drawn and data-script-errors on <body>).
# Usage: browser_report.sh DTSIM OUT_DIR. Exit 77 (ctest: skipped) when Chromium is not installed.
set -euo pipefail
dtsim=$1
out=$2
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: no chromium on this machine (tools/test installs Debian's chromium)"
  exit 77
fi
mkdir -p "$out"
"$dtsim" report scenarios/imagenet-resnet50-32gpu.json -o "$out/report.html" --scaling-gpus 1,2,4,8,16,32 \
  --compare-strategies ddp,fsdp,zero2 -j 2 --set training.compute.single_gpu_throughput=367
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars
       "--user-data-dir=$profile" --window-size=1280,2600)
timeout 180 "$browser" "${flags[@]}" --screenshot="$out/report.png" "file://$out/report.html" 2>"$out/chromium.log" || {
  echo "chromium failed to render the page:"; tail -20 "$out/chromium.log"; exit 1; }
timeout 180 "$browser" "${flags[@]}" --dump-dom "file://$out/report.html" >"$out/report.dom.html" 2>>"$out/chromium.log"
body=$(grep -o '<body[^>]*>' "$out/report.dom.html" | head -1)
echo "body after load: $body"
charts=$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' <<<"$body")
drawn=$(sed -n 's/.*data-charts-drawn="\([0-9]*\)".*/\1/p' <<<"$body")
errors=$(sed -n 's/.*data-script-errors="\([0-9]*\)".*/\1/p' <<<"$body")
[ -n "$charts" ] && [ -n "$drawn" ] && [ -n "$errors" ] || { echo "FAIL: the page's check did not run"; exit 1; }
[ "$errors" = 0 ] || { echo "FAIL: $errors script error(s)"; exit 1; }
# timeline, breakdown, link utilisation, speedup, efficiency, strategies
[ "$charts" -ge 6 ] || { echo "FAIL: $charts charts, expected at least 6"; exit 1; }
[ "$drawn" = "$charts" ] || { echo "FAIL: $drawn of $charts charts drawn"; exit 1; }
png_bytes=$(stat -c %s "$out/report.png")
[ "$png_bytes" -gt 20000 ] || { echo "FAIL: screenshot is only $png_bytes bytes"; exit 1; }
echo "OK: $drawn of $charts charts drawn, no script error, screenshot $out/report.png ($png_bytes bytes)"
