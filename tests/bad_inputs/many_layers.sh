#!/bin/sh
# Writes a model file of 150,000 layers (over the 100,000 a model may have) to $2 and runs dtsim ($1) on
# it: exit 2 within 60 s (its JSON, 15 MB of objects in one array, took minutes to parse before).
awk 'BEGIN { printf "{\"name\": \"many\", \"source\": \"bad-input test\", \"input_elems\": 10, \"layers\": [";
             for (i = 0; i < 150000; i++)
               printf "%s{\"name\": \"l%d\", \"kind\": \"activation\", \"params\": [], \"fwd_flops\": 0, \"activation_elems\": 10}", (i ? ", " : ""), i;
             print "]}" }' > "$2"
timeout 60 "$1" run scenarios/seed-4gpu-ddp.json --set "model=$2" > /dev/null 2> "$2.err"
rc=$?
cat "$2.err"
grep -q 'expected at most 100000 layers' "$2.err" && test $rc -eq 2
ok=$?
rm -f "$2" "$2.err"
exit $ok
