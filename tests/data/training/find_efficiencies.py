#!/usr/bin/env python3
"""find_efficiencies.py DTSIM CSV [--gpu SUBSTRING] [--id SUBSTRING]

Finds again the compute=efficiency=F of a runs CSV's calibration rows (rows without a baseline) with
dtsim's own calibration: those rows, their compute cell set to efficiency=calibrate, through one
`DTSIM validate --json` (efficiency_calibration.hpp: the efficiency at which dtsim's rate meets the
measured one, to 1e-5 of it; a row measured as seconds per iteration with its global batch is
compared as samples per second). Writes each found value (4 decimals) into the row and into every
row judged against it, and leaves the rest of the file as it is. --gpu limits it to rows whose gpu
column contains SUBSTRING, --id to rows whose id contains SUBSTRING. Run it from the repository root
when cli.calibration_rows_reproduce_measurements names stale rows after a model change; then update
the efficiencies the CSV's header lists. (A CSV may also keep efficiency=calibrate in its rows:
validate then finds the efficiencies on every run, at several simulations per calibration row.)"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile


def calibrated_efficiencies(dtsim, header, rows, directory):
    """{id: efficiency} of `rows` (calibration rows), found by `dtsim validate` on them alone."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", dir=directory, delete=False) as f:
        w = csv.DictWriter(f, header, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, compute="efficiency=calibrate"))
        path = f.name
    try:
        out = subprocess.run([dtsim, "validate", path, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(out.stderr.replace(path, "(calibration rows of the CSV)"))
        return {r["id"]: r["efficiency"] for r in json.loads(out.stdout)["rows"]}
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dtsim")
    ap.add_argument("csv")
    ap.add_argument("--gpu", default="")
    ap.add_argument("--id", default="")
    a = ap.parse_args()
    lines = open(a.csv).read().split("\n")
    data = [i for i, l in enumerate(lines) if l and not l.startswith("#")]
    header = next(csv.reader([lines[data[0]]]))
    rows = {i: dict(zip(header, next(csv.reader([lines[i]])))) for i in data[1:]}
    rows_by_id = {r["id"]: r for r in rows.values()}
    directory = os.path.dirname(os.path.abspath(a.csv))  # relative cluster and model files resolve
    chosen = [r for r in rows.values()
              if not r["baseline"] and a.gpu in r.get("gpu", "") and a.id in r["id"]
              and r["compute"].startswith("efficiency=") and r["compute"] != "efficiency=calibrate"]
    found = {}
    if chosen:
        for rid, e in calibrated_efficiencies(a.dtsim, header, chosen, directory).items():
            found[rid] = f"efficiency={e:.4f}"
            print(f"{rid}: {rows_by_id[rid]['compute']} -> {found[rid]}", file=sys.stderr)
    for i, r in rows.items():
        key = r["baseline"] or r["id"]
        if key in found:
            if lines[i].count(r["compute"]) != 1:
                sys.exit(f"{a.csv}: line {i + 1}: '{r['compute']}' is not once in the row")
            lines[i] = lines[i].replace(r["compute"], found[key])
    open(a.csv, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
