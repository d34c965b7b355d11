#!/bin/bash
# startup_ab.sh BASE NEW [N]: `lite-agent run` (one scripted turn, new
# session) with two lite-agent binaries, alternating run by run so that
# both see the same machine load; prints each one's median in ms.
set -euo pipefail
base=$1 new=$2 n=${3:-60}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/ws" "$dir/s1" "$dir/s2"
echo '{"turns": [{"text": "hello"}]}' > "$dir/one-turn.json"
for i in $(seq "$n"); do
  for which in base new; do
    bin=$base state=$dir/s1
    if [[ $which == new ]]; then bin=$new state=$dir/s2; fi
    s=$(date +%s%N)
    "$bin" run --workspace "$dir/ws" --state-dir "$state" --script "$dir/one-turn.json" hi >/dev/null
    e=$(date +%s%N)
    echo $(( (e - s) / 1000 )) >> "$dir/$which.txt"
  done
done
for which in base new; do
  sort -n "$dir/$which.txt" | awk -v w="$which" '{a[NR]=$1} END {printf "%s median %.1f ms (%d runs)\n", w, a[int((NR+1)/2)]/1000, NR}'
done
