"""Writing the calibration programs' JSON: whole or not at all (a run stopped midway leaves the
previous file, never half of one)."""
import json
import os


def write_json_atomically(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)
