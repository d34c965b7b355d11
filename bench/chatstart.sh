#!/usr/bin/env bash
# The interactive mode's start and idle memory (issue 27: under 0.3 s to
# the first prompt, under 60 MB idle), for each binary given, side by side:
#
#   bench/chatstart.sh BIN [BIN...]      (RUNS=20 by default)
#
# Each run starts `BIN --script` (the scripted model: no network) in an
# 80x24 tmux pane of a server of this script's own, and times from the
# start until the pane shows the status line "ready · " (capture-pane
# polled as fast as tmux answers, a few ms); then, at the idle prompt, it
# reads VmRSS of the process and of everything it started (the sum).
# Prints the median and the range of both per binary. Each binary is
# copied first, as make install copies it: the file go build writes has
# its pages cached in large folios, and the kernel maps more of it at each
# page fault (the same binary run from go build's output shows ~54 MB
# idle, ~19 MB more, all of it file pages of the executable).
set -euo pipefail
runs=${RUNS:-20}
sock="la-bench-$$"
tmp=$(mktemp -d)
# The server's socket in the temporary directory, removed with it.
export TMUX_TMPDIR=$tmp
t() { tmux -L "$sock" -f /dev/null "$@"; }
trap 't kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
t new-session -d -s main -x 80 -y 24 "sleep 1000000" \; set-option -g status off \; set-option -g remain-on-exit on
mkdir -p "$tmp/ws" "$tmp/state" "$tmp/cfg"
echo '{"turns": [{"text": "hi"}]}' >"$tmp/s.json"

# rss_tree PID: VmRSS (kB) of PID and its descendants.
rss_tree() {
  local total=0 p
  for p in $1 $(pgrep -P "$1" || true); do
    total=$((total + $(awk '/^VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

n=0
for arg in "$@"; do
  n=$((n + 1))
  mkdir -p "$tmp/bin$n"
  cp "$arg" "$tmp/bin$n/lite-agent"
  bin=$tmp/bin$n/lite-agent
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    t respawn-pane -k -t main -e NO_COLOR=1 -e "XDG_CONFIG_HOME=$tmp/cfg" -e "XDG_STATE_HOME=$tmp/state" -- \
      "$bin" --workspace "$tmp/ws" --state-dir "$tmp/state" --script "$tmp/s.json"
    until t capture-pane -p -t main | grep -q 'ready · '; do :; done
    end=$(date +%s%N)
    pid=$(t display-message -p -t main '#{pane_pid}')
    echo "$arg $(((end - start) / 1000)) $(rss_tree "$pid")"
  done
done | python3 -c '
import sys, statistics
rows = {}
for line in sys.stdin:
    b, us, kb = line.split()
    rows.setdefault(b, []).append((int(us) / 1e6, int(kb) / 1024))
for b, v in rows.items():
    s = sorted(x[0] for x in v); m = sorted(x[1] for x in v)
    print("%-40s start to the first prompt: median %.3f s (%.3f-%.3f)   idle RSS: median %.1f MB (%.1f-%.1f)   n=%d"
          % (b, statistics.median(s), s[0], s[-1], statistics.median(m), m[0], m[-1], len(v)))
'
