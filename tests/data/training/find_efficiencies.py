#!/usr/bin/env python3
"""find_efficiencies.py DTSIM CSV [--gpu SUBSTRING] [--id SUBSTRING] [--range LO HI] [--halvings N]

Finds again, by bisection, the compute=efficiency=F of a runs CSV's calibration rows (rows without a
baseline), as the CSVs' headers describe it: N halvings (default 14) of [LO, HI] (default 0.2 0.95),
each step a one-row CSV through `DTSIM validate --json`, the efficiency raised while dtsim's rate is
below the measured one (validate's rates: a row measured as seconds per iteration is compared as
samples per second). Writes each found value (4 decimals) into the row and into every row judged
against it, and leaves the rest of the file as it is. --gpu limits it to rows whose gpu column
contains SUBSTRING, --id to rows whose id contains SUBSTRING (for a header that gives one row another
range). Run it from the repository root when cli.calibration_rows_reproduce_measurements names stale
rows after a model change; then update the efficiencies the CSV's header lists."""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile


def predicted_and_measured_rate(dtsim, header, row, directory):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", dir=directory, delete=False) as f:
        w = csv.DictWriter(f, header, lineterminator="\n")
        w.writeheader()
        w.writerow(row)
        path = f.name
    try:
        out = subprocess.run([dtsim, "validate", path, "--json"], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout)["rows"][0]
        return row["predicted_rate"], row["measured_rate"]  # a measured time is a rate here
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dtsim")
    ap.add_argument("csv")
    ap.add_argument("--gpu", default="")
    ap.add_argument("--id", default="")
    ap.add_argument("--range", nargs=2, type=float, default=[0.2, 0.95])
    ap.add_argument("--halvings", type=int, default=14)
    a = ap.parse_args()
    lines = open(a.csv).read().split("\n")
    data = [i for i, l in enumerate(lines) if l and not l.startswith("#")]
    header = next(csv.reader([lines[data[0]]]))
    rows = {i: dict(zip(header, next(csv.reader([lines[i]])))) for i in data[1:]}
    directory = os.path.dirname(os.path.abspath(a.csv))  # relative cluster and model files resolve
    found = {}
    for r in rows.values():
        if r["baseline"] or a.gpu not in r.get("gpu", "") or a.id not in r["id"]:
            continue
        if not r["compute"].startswith("efficiency="):
            continue
        lo, hi = a.range
        trial = dict(r)
        for _ in range(a.halvings):
            mid = (lo + hi) / 2
            trial["compute"] = f"efficiency={mid}"
            predicted, measured = predicted_and_measured_rate(a.dtsim, header, trial, directory)
            if predicted < measured:
                lo = mid
            else:
                hi = mid
        found[r["id"]] = f"efficiency={(lo + hi) / 2:.4f}"
        print(f"{r['id']}: {r['compute']} -> {found[r['id']]}", file=sys.stderr)
    for i, r in rows.items():
        key = r["baseline"] or r["id"]
        if key in found:
            if lines[i].count(r["compute"]) != 1:
                sys.exit(f"{a.csv}: line {i + 1}: '{r['compute']}' is not once in the row")
            lines[i] = lines[i].replace(r["compute"], found[key])
    open(a.csv, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
