#!/bin/bash
# sandboxrun_ab.sh BEFORE AFTER [N]: `sandbox run -- /bin/true` of two
# builds (BEFORE and AFTER: directories each holding a lite-agent and the
# lite-agent-sandbox of its build, as `make install` puts them), through
# lite-agent's hand-over and directly, beside bubblewrap and /bin/true,
# alternating run by run so that every variant sees the same machine
# load (hyperfine runs each variant's 300 runs in one block, which a
# developer's build starting midway makes unequal); prints each one's
# median and quartiles in ms (bash's own clock: no process is started
# to read it).
set -euo pipefail
before=$1 after=$2 n=${3:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/ws"
ws=$dir/ws
names=(before-hands-over before-lite-agent-sandbox after-hands-over after-lite-agent-sandbox bwrap true)
cmds=(
  "$before/lite-agent sandbox run --workspace $ws -- /bin/true"
  "$before/lite-agent-sandbox run --workspace $ws -- /bin/true"
  "$after/lite-agent sandbox run --workspace $ws -- /bin/true"
  "$after/lite-agent-sandbox run --workspace $ws -- /bin/true"
  "bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --new-session --die-with-parent /bin/true"
  "/bin/true"
)
for i in $(seq $((n + 5))); do
  for k in "${!cmds[@]}"; do
    s=${EPOCHREALTIME/./}
    ${cmds[$k]} >/dev/null
    e=${EPOCHREALTIME/./}
    if ((i > 5)); then echo $((e - s)) >>"$dir/${names[$k]}.txt"; fi
  done
done
for k in "${!names[@]}"; do
  sort -n "$dir/${names[$k]}.txt" | awk -v w="${names[$k]}" '{a[NR]=$1} END {printf "%-26s median %6.2f ms  (p25 %.2f, p75 %.2f; %d runs)\n", w, a[int((NR+1)/2)]/1000, a[int((NR+3)/4)]/1000, a[int((3*NR+3)/4)]/1000, NR}'
done
