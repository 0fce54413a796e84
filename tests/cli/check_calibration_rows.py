#!/usr/bin/env python3
"""check_calibration_rows.py DTSIM TOLERANCE_PERCENT CSV...

Each runs CSV calibrates dtsim's compute on its rows without a baseline: their compute=efficiency=F
was found by bisection so that dtsim reproduces the measured rate (the CSVs' headers say how). A
change to dtsim's model moves those predictions, and the efficiencies go stale without any compared
row failing (ratios hide it): this fails when a calibration row is further than TOLERANCE_PERCENT from
its measurement, naming the row, so that the efficiencies are found again."""
import json
import subprocess
import sys


def main():
    dtsim, tolerance = sys.argv[1], float(sys.argv[2])
    stale = []
    for csv in sys.argv[3:]:
        out = subprocess.run([dtsim, "validate", csv, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{csv}: dtsim validate exited {out.returncode}: {out.stderr.strip()}")
            return 1
        rows = [r for r in json.loads(out.stdout)["rows"] if not r["baseline"]]
        if not rows:
            print(f"{csv}: no calibration row")
            return 1
        for r in rows:
            off = 100 * (r["predicted_rate"] / r["measured_rate"] - 1)
            print(f"{csv}: {r['id']}: dtsim {off:+.3f}% from its measurement")
            if abs(off) > tolerance:
                stale.append(f"{csv}: {r['id']} ({off:+.3f}%)")
    if stale:
        print(f"stale calibration (more than {tolerance}%): " + "; ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
