#!/usr/bin/env bash
# Reruns every benchmark of BENCHMARKS.md side by side on this machine.
#   bench/run.sh            all
#   bench/run.sh kernel     go benchmarks of the kernel loop
#   bench/run.sh startup    lite-agent run, one scripted turn, start to finish
#   bench/run.sh chat       the interactive mode: start to the first prompt, idle memory (bench/chatstart.sh; BASE=BIN adds a binary to compare)
#   bench/run.sh grep       the grep tool vs ripgrep on a 20,000-file tree
#   bench/run.sh sandbox    confined spawn vs plain exec vs bubblewrap
#   bench/run.sh cgroup     joining a v1 cgroup: by tid vs a thread moving itself
#   bench/run.sh gate       permission gate with 200 rules
#   bench/run.sh mcp        in-process MCP tool call vs plain
#   bench/run.sh checkpoint checkpoints vs shadow git (LITE_AGENT_CKPT_BENCH_FILES=20000 for the issue's size)
#   bench/run.sh longsession 70-turn session vs a fake API with a window and caching; billed input vs Claude Code
#   bench/run.sh realwork   a real Go module's tests twice through the agent's bash vs unconfined (bench/realwork.sh)
#   bench/run.sh turns      per-turn time over a 2,000-turn session, early to late (bench/turns)
#   bench/run.sh memory     peak memory of a 50 MB write_file input and of 2 GiB of bash output
#   bench/run.sh rss        RSS/PSS/USS of a 2-turn headless session, the binary as built and as installed (bench/rss)
#   bench/run.sh faults     kill -9 during run and rewind, concurrent sessions, full disks (bench/faults; root for the disks)
# Needs: go, hyperfine, ripgrep, bubblewrap, tmux (make bench-deps installs them as root).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${BENCH_OUT:-/tmp/lite-agent-bench}
mkdir -p "$out"
# medians prints the median of each command of a hyperfine JSON export.
medians() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("median %8.2f ms  %s" % (r["median"] * 1000, r["command"]))
PY
}
benchstat() { go run golang.org/x/perf/cmd/benchstat@latest "$@"; }

if [[ $what == all || $what == kernel ]]; then
  echo "== kernel: overhead per tool-call turn (scripted model, no-op tool)"
  go test ./kernel -run '^$' -bench 'ToolCallTurn|ToolCallValidation' -count 6 | tee "$out/kernel.txt"
  benchstat "$out/kernel.txt"
fi

if [[ $what == all || $what == startup ]]; then
  echo "== startup: lite-agent run, one scripted turn, start to finish"
  go build -o bin/lite-agent ./cmd/lite-agent
  ws=$(mktemp -d) state=$(mktemp -d)
  echo '{"turns": [{"text": "hello"}]}' > "$out/one-turn.json"
  hyperfine -N --warmup 5 --runs 200 --export-json "$out/startup.json" \
    -n "lite-agent run (one scripted turn)" "bin/lite-agent run --workspace $ws --state-dir $state --script $out/one-turn.json hi" \
    -n "/bin/true" "/bin/true"
  medians "$out/startup.json"
  rm -rf "$ws" "$state"
fi

if [[ $what == all || $what == chat ]]; then
  echo "== chat: the interactive mode's start to the first prompt and its idle memory (80x24 tmux pane, scripted model)"
  go build -o bin/lite-agent ./cmd/lite-agent
  bench/chatstart.sh ${BASE:+"$BASE"} bin/lite-agent
fi

if [[ $what == all || $what == grep ]]; then
  echo "== grep tool vs ripgrep, 20,000 files, same query, same matches"
  go test ./tools/builtin -run '^$' -bench 'Grep|Ripgrep' -benchtime 10x -count 6 -timeout 30m | tee "$out/grep.txt"
  benchstat -col .name "$out/grep.txt"
fi

if [[ $what == all || $what == sandbox ]]; then
  echo "== sandbox: confined /bin/true from the Go API vs plain exec.Command, same run"
  go test ./sandbox -run '^$' -bench 'SpawnConfinedTrue|SpawnPlainExecTrue' -count 6 | tee "$out/spawn.txt"
  benchstat "$out/spawn.txt"
  go test ./sandbox -run '^$' -bench SpawnSideBySide -count 3 | tee "$out/spawn-side.txt"
  echo "== sandbox: lite-agent sandbox run -- /bin/true vs bubblewrap vs /bin/true, one hyperfine run"
  # Both programs, as make install puts them (one version stamp): lite-agent
  # hands `sandbox run` to lite-agent-sandbox. Copied first, as install
  # copies (a file the linker just wrote maps in larger pieces).
  make -s build
  bins=$(mktemp -d)
  install -m 0755 bin/lite-agent bin/lite-agent-sandbox "$bins/"
  ws=$(mktemp -d)
  # The same isolation for bwrap: a read-only view of /, every namespace,
  # a new session, killed with its parent.
  hyperfine -N --warmup 10 --runs 300 --export-json "$out/sandbox.json" \
    -n "lite-agent sandbox run -- /bin/true" "$bins/lite-agent sandbox run --workspace $ws -- /bin/true" \
    -n "lite-agent sandbox run, in-process" "env LITE_AGENT_SANDBOX_ENTRY=in-process $bins/lite-agent sandbox run --workspace $ws -- /bin/true" \
    -n "lite-agent-sandbox run -- /bin/true" "$bins/lite-agent-sandbox run --workspace $ws -- /bin/true" \
    -n "bwrap /bin/true" "bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --new-session --die-with-parent /bin/true" \
    -n "/bin/true" "/bin/true"
  medians "$out/sandbox.json"
  python3 - "$out/sandbox.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
bw = next(v for v in r if v["command"].startswith("bwrap"))
for v in r:
    if "lite-agent" in v["command"]:
        print("%-48s / bwrap (medians): %.2fx; CPU (user+sys): %.2f ms vs %.2f ms" % (
            v["command"].split(" --workspace")[0][-48:], v["median"] / bw["median"],
            (v["user"] + v["system"]) * 1000, (bw["user"] + bw["system"]) * 1000))
PY
  rm -rf "$ws" "$bins"
fi

if [[ $what == all || $what == rss ]]; then
  echo "== memory of a 2-turn headless session: RSS, PSS, USS; as built and installed"
  go build -o bin/lite-agent ./cmd/lite-agent
  go run ./bench/rss -runs 20 bin/lite-agent
fi

if [[ $what == all || $what == cgroup ]]; then
  echo "== cgroup v1: joining by tid vs a thread moving itself (root, v1 pids)"
  gcc -O2 -o "$out/cgroup_move" bench/cgroup_move.c && "$out/cgroup_move"
fi

if [[ $what == all || $what == gate ]]; then
  echo "== permission gate, 200 rules"
  go test ./kernel/ -run '^$' -bench BenchmarkGate200Rules -benchtime=20000x -count=5 | tee "$out/gate.txt"
fi

if [[ $what == all || $what == mcp ]]; then
  echo "== in-process MCP tool call vs plain"
  go test ./kernel -run '^$' -bench 'MCPToolCallTurn/.*-in-process' -benchtime 30x -count 6 | tee "$out/mcp.txt"
  go test ./kernel -run '^$' -bench 'MCPToolCallTurn/.*-confined' -benchtime 5x -count 6 | tee -a "$out/mcp.txt"
  go test ./mcp -run '^$' -bench ToolCall -count 6 | tee -a "$out/mcp.txt"
fi

if [[ $what == all || $what == checkpoint ]]; then
  echo "== checkpoints vs shadow git, side by side (files: ${LITE_AGENT_CKPT_BENCH_FILES:-2000})"
  go test ./checkpoint -run '^$' -bench 'SessionStart|OneFile|BashEdit|Rewind100' -benchtime 5x -count 3 -timeout 60m | tee "$out/checkpoint.txt"
  go test ./checkpoint -run '^$' -bench 'StoreSize50' -benchtime 1x -timeout 60m | tee -a "$out/checkpoint.txt"
  benchstat -col .name "$out/checkpoint.txt"
fi

if [[ $what == all || $what == turns ]]; then
  echo "== per-turn time over 2,000 turns: median of each 200, early to late"
  go run ./bench/turns -model anthropic | tee "$out/turns.txt"
  go run ./bench/turns -model scripted | tee -a "$out/turns.txt"
  go run ./bench/turns -model scripted -checkpoints | tee -a "$out/turns.txt"
fi

if [[ $what == all || $what == memory ]]; then
  echo "== peak memory: one 50 MB write_file input; 2 GiB of bash output"
  go test -count=1 -run 'TestLargeToolInputMemory|TestHugeCommandOutputMemory' -v ./test/ | grep -E 'memory_e2e|^(---|ok|FAIL)' | tee "$out/memory.txt"
fi

if [[ $what == all || $what == faults ]]; then
  echo "== fault trials: kill -9 during run and rewind, concurrent sessions, full disks"
  go build -o bin/lite-agent ./cmd/lite-agent
  go run ./bench/faults -bin bin/lite-agent | tee "$out/faults.txt"
fi

if [[ $what == all || $what == longsession ]]; then
  echo "== long session: 70 reads of ~14 KB files against a fake API with a 200,000-token window and prompt caching"
  # Side by side with Claude Code when it is installed (npm i @anthropic-ai/claude-code; CLAUDE=path to override).
  claude=${CLAUDE:-$(command -v claude || true)}
  go run ./bench/longsession ${claude:+-claude "$claude"} | tee "$out/longsession.txt"
  echo "-- the same with a 50,000-token window, told to the kernel, then met only by the API's 400"
  go run ./bench/longsession -window 50000 | tee -a "$out/longsession.txt"
  go run ./bench/longsession -window 50000 -tell-window=false | tee -a "$out/longsession.txt"
  echo "-- kernel cost per turn with context bookkeeping (in-process no-op tool), and of the edited view"
  go test ./kernel -run '^$' -bench 'ToolCallTurnInProcess|ContextPerTurn' -count 6 | tee "$out/context.txt"
  benchstat "$out/context.txt"
fi

if [[ $what == all || $what == realwork ]]; then
  echo "== real work: a Go module's test suite through the agent's bash (twice, one session) vs unconfined, warm"
  bench/realwork.sh | tee "$out/realwork.txt"
fi
