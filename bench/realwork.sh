#!/usr/bin/env bash
# Issue 13's benchmark: the test suite of a real Go module with
# dependencies (this repository's policies package: go-toml, mvdan.cc/sh,
# jsonschema-go from the module cache) run twice through the agent's bash
# in one session, network none, fresh per-workspace caches — against the
# same command unconfined with a warm cache.
#   bench/realwork.sh            (RUNS=5 unconfined runs; CMD to change the command)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-/tmp/lite-agent-bench}/realwork
rm -rf "$out"; mkdir -p "$out/ws" "$out/state" "$out/xdgcache"
# (TestBashRunsCodeFrom runs su(1), which needs PAM: refused in the
# sandbox by design, so it is skipped on both sides.)
cmd=${CMD:-go test -count=1 -skip TestBashRunsCodeFrom ./policies/}
runs=${RUNS:-5}
go build -o "$out/lite-agent" ./cmd/lite-agent
git archive HEAD | tar -x -C "$out/ws"
python3 - "$cmd" > "$out/script.json" <<'PY'
import json, sys
c = "TIMEFORMAT=%R; time (" + sys.argv[1] + " >/dev/null 2>&1); echo status=$?"
call = lambda i: {"tool_calls": [{"id": "b%d" % i, "name": "bash", "input": {"command": c, "timeout_ms": 600000}}]}
print(json.dumps({"turns": [call(1), call(2), {"text": "done"}]}))
PY
XDG_CACHE_HOME="$out/xdgcache" "$out/lite-agent" run --workspace "$out/ws" --state-dir "$out/state" \
  --script "$out/script.json" --allowed-tools bash --no-checkpoints --output-format stream-json work > "$out/session.jsonl"
# Unconfined, warm: one warm-up run, then $runs.
(cd "$out/ws" && bash -c "$cmd" >/dev/null 2>&1)
for i in $(seq "$runs"); do
  (cd "$out/ws" && TIMEFORMAT=%R && { time bash -c "$cmd" >/dev/null 2>&1; } 2>>"$out/unconfined.txt")
done
python3 - "$out" "$cmd" <<'PY'
import json, re, statistics, sys
out, cmd = sys.argv[1], sys.argv[2]
times = []
for line in open(out + "/session.jsonl"):
    ev = json.loads(line)
    if ev.get("type") == "tool_result":
        text = "".join(c.get("text", "") for c in ev.get("content", []))
        m = re.search(r"^(\d+\.\d+)\s*$", text, re.M)
        if "status=0" not in text or not m:
            sys.exit("a confined run failed:\n" + text)
        times.append(float(m.group(1)))
unc = [float(x) for x in open(out + "/unconfined.txt").read().split()]
med = statistics.median(unc)
print("command: %s" % cmd)
print("confined, first run (cold per-workspace caches): %.2f s" % times[0])
print("confined, second run in the same session:       %.2f s" % times[1])
print("unconfined, warm cache, median of %d:            %.2f s  (%s)" % (len(unc), med, " ".join("%.2f" % u for u in unc)))
print("second / unconfined: %.2fx (target <= 1.2x)" % (times[1] / med))
PY
