#!/usr/bin/env python3
"""Writes models/NAME.json for every model dtsim ships, from the architectures in this folder.

    python3 models/generate/generate_models.py           # rewrite the JSON files, print totals
    python3 models/generate/generate_models.py --check   # exit 1 if a committed file differs

Python 3 standard library only, so the committed numbers can be reproduced anywhere.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cnn_models  # noqa: E402
import transformer_models  # noqa: E402

MODELS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    check = "--check" in argv[1:]
    stale = []
    for table in cnn_models.all_models() + transformer_models.all_models():
        path = os.path.join(MODELS_DIR, table.name + ".json")
        text = table.to_json_text()
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except OSError:
                current = None
            if current != text:
                stale.append(path)
            continue
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        print(f"{table.name:18} {len(table.layers):5} layers {table.tensors():5} tensors "
              f"{table.params():>16,} params {table.fwd_flops():>22,} fwd FLOPs/sample")
    if stale:
        print("out of date (run models/generate/generate_models.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
