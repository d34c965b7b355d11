#!/usr/bin/env bash
# Installs the system packages lite-agent needs, when run as root; otherwise
# prints the exact command to run. Idempotent: installs only what is missing.
#
#   libseccomp-dev  cgo headers and library for the seccomp filter (sandbox)
#   gcc             cgo
#   python3, git    used by the end-to-end tests and the demo
#   ripgrep, hyperfine, bubblewrap  only for the benchmarks (bench/)
set -euo pipefail

want=(libseccomp-dev gcc python3 git)
if [[ "${1:-}" == "--bench" ]]; then
  want+=(ripgrep hyperfine bubblewrap)
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "lite-agent needs these packages (Debian names): ${missing[*]}; install them with your package manager." >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "lite-agent needs: ${missing[*]}. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
}
