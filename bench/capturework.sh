#!/usr/bin/env bash
# The cost of change capture on a real test suite: CMD run three times
# through the agent's bash in one `lite-agent run` session (checkpoints on),
# for each lite-agent binary given, alternating, ROUNDS times; and the same
# three runs unconfined. Prints wall time and CPU (user + sys, the whole
# session: supervisor and command) per session, then medians.
#   WS=DIR CMD='./sq.test -test.count=1' bench/capturework.sh BIN [BIN...]
# XDG_ROOT=DIR keeps each binary's per-workspace caches there across
# invocations (default: fresh ones under the output directory), so that a
# build's second run can be measured warm: run once to fill them, then
# measure.
# e.g. for mattn/go-sqlite3: copy the module from the module cache to DIR,
# `go test -c -o sq.test .` there, then run this with the two binaries.
set -euo pipefail
ws=${WS:?WS=the workspace (the module)}
cmd=${CMD:?CMD=the command, run in WS}
rounds=${ROUNDS:-3}
out=${BENCH_OUT:-/tmp/lite-agent-bench}/capturework
rm -rf "$out"; mkdir -p "$out"
python3 - "$cmd" > "$out/script.json" <<'PY'
import json, sys
c = "TIMEFORMAT=%R; time (" + sys.argv[1] + " >/dev/null 2>&1); echo status=$?"
call = lambda i: {"tool_calls": [{"id": "b%d" % i, "name": "bash", "input": {"command": c, "timeout_ms": 600000}}]}
print(json.dumps({"turns": [call(1), call(2), call(3), {"text": "done"}]}))
PY
for r in $(seq "$rounds"); do
  i=0
  for bin in "$@"; do
    i=$((i + 1))
    st="$out/state-$r-$i"; mkdir -p "$st"
    /usr/bin/time -f "bin$i %e %U %S" -a -o "$out/times" env XDG_CACHE_HOME="${XDG_ROOT:-$out}/xdg-$i" \
      "$bin" run --workspace "$ws" --state-dir "$st" --script "$out/script.json" \
      --allowed-tools bash --output-format stream-json work > "$out/session-$r-$i.jsonl" 2>/dev/null
    grep '^{"type":"tool_result"' "$out/session-$r-$i.jsonl" | grep -c 'status=0' | grep -qx 3 || { echo "a confined run failed: $out/session-$r-$i.jsonl"; exit 1; }
  done
  (cd "$ws" && /usr/bin/time -f "unconfined %e %U %S" -a -o "$out/times" bash -c "for i in 1 2 3; do $cmd >/dev/null 2>&1; done")
done
python3 - "$out/times" "$@" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:
        rows[f[0]].append((float(f[1]), float(f[2]) + float(f[3])))
names = {"bin%d" % (i + 1): b for i, b in enumerate(sys.argv[2:])}
for k, v in rows.items():
    print("%-40s wall %s  cpu %s  median wall %.2f s, cpu %.2f s" % (names.get(k, k),
          " ".join("%.2f" % w for w, _ in v), " ".join("%.2f" % c for _, c in v),
          statistics.median(w for w, _ in v), statistics.median(c for _, c in v)))
PY
