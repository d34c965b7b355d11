#!/usr/bin/env bash
# The README demo: a scripted agent (offline, no API key) works on a copy of
# examples/demo in a fresh temporary workspace: it lists, reads, edits and
# writes files, runs the new test with bash inside the sandbox, and greps.
# Then the session's checkpoints are listed and the files are rewound to the
# state before the agent's first change.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${LITE_AGENT_BIN:-bin/lite-agent}
ws=$(mktemp -d /tmp/lite-agent-demo-ws.XXXXXX)
state=$(mktemp -d /tmp/lite-agent-demo-state.XXXXXX)
cp examples/demo/greet.py "$ws/"

echo "== workspace: $ws"
echo "== greet.py before:"
sed 's/^/   /' "$ws/greet.py"
echo "== the agent (scripted model, tool calls on stderr):"
"$bin" run --workspace "$ws" --state-dir "$state" \
  --script examples/demo/script.json \
  --allowed-tools write_file,edit_file,bash \
  --verbose \
  "Make greet() take a name and add a test for it."
echo "== greet.py after:"
sed 's/^/   /' "$ws/greet.py"
echo "== files in the workspace:"
(cd "$ws" && find . -type f | sort | sed 's/^/   /')
echo "== the session transcript and checkpoints are outside the workspace: $state"
session=$("$bin" sessions --state-dir "$state" --workspace "$ws" --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session_id"])')
echo "== checkpoints of session $session:"
"$bin" checkpoints --state-dir "$state" "$session" | sed 's/^/   /'
echo "== rewind to checkpoint 0 (before the agent's first change):"
"$bin" rewind --state-dir "$state" "$session" --to 0 --files-only | sed 's/^/   /'
echo "== greet.py after the rewind:"
sed 's/^/   /' "$ws/greet.py"
