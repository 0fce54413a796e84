#!/usr/bin/env python3
"""serialized_comm_hypothesis.py DTSIM CSV...

What a runs CSV's compared rows would say if a sharded run's collectives hid nothing behind compute
(and so slowed none of it): each row's iteration is taken as dtsim's iteration + its collectives in
flight - the part of them dtsim already leaves exposed - the compute dtsim slows beside NCCL's kernels
(validate --json: predicted_iteration_s, predicted_sharded_comm_in_flight_s, predicted_exposed_comm_s,
predicted_nccl_slowdown_s), the samples per iteration kept, and the ratio to the row's baseline compared
with the measured one, as validate compares them. Prints, per CSV, the median and worst |error| of
dtsim as it is and under that hypothesis, by GPU (h100, a100-80, a100-40 from the row ids; other).
The efficiencies are not found again for the hypothesis (a ratio-level check, not a model)."""
import json
import statistics
import subprocess
import sys


def iteration(row, serialized):
    t = row["predicted_iteration_s"]
    if serialized:
        t += row["predicted_sharded_comm_in_flight_s"] - row["predicted_exposed_comm_s"] - row["predicted_nccl_slowdown_s"]
    return t


def group(row_id):
    for key, name in (("h100", "h100"), ("80gb", "a100-80"), ("40gb", "a100-40")):
        if key in row_id:
            return name
    return "other"


def main():
    dtsim = sys.argv[1]
    for csv in sys.argv[2:]:
        out = subprocess.run([dtsim, "validate", csv, "--json"], capture_output=True, text=True, check=True)
        rows = {r["id"]: r for r in json.loads(out.stdout)["rows"]}
        for serialized in (False, True):
            errors = {}
            for r in rows.values():
                if not r["baseline"]:
                    continue
                b = rows[r["baseline"]]
                samples = r["predicted_rate"] * r["predicted_iteration_s"]
                base_samples = b["predicted_rate"] * b["predicted_iteration_s"]
                ratio = (samples / iteration(r, serialized)) / (base_samples / iteration(b, serialized))
                errors[r["id"]] = abs(100 * (ratio / (r["measured_rate"] / b["measured_rate"]) - 1))
            by_group = {}
            for row_id, e in errors.items():
                by_group.setdefault(group(row_id), []).append(e)
            parts = [f"{g} {statistics.median(v):.1f}% / {max(v):.1f}%" for g, v in sorted(by_group.items())]
            print(f"{csv}: {'serialized' if serialized else 'dtsim     '}: median {statistics.median(errors.values()):.1f}%, "
                  f"worst {max(errors.values()):.1f}% ({', '.join(parts)})")


if __name__ == "__main__":
    main()
