#!/usr/bin/env bash
# Installs the system packages lite-agent needs, when run as root; otherwise
# prints the exact command to run. Idempotent: installs only what is missing.
#
#   libseccomp-dev  cgo headers and library for the seccomp filter (sandbox)
#   gcc             cgo
#   python3, git    used by the end-to-end tests and the demo
#   ripgrep, hyperfine, bubblewrap  only for the benchmarks (bench/)
#   the toolchains the real-work tests build projects with (test/
#   realwork_e2e_test.go; each skips naming `make deps` without its own):
#   nodejs npm, python3-venv python3-pytest, default-jdk-headless maven,
#   and cargo unless a cargo (rustup's, say) is already on PATH
set -euo pipefail

want=(libseccomp-dev gcc python3 git)
# Toolchains are judged by the command, not the package: a node, JDK or
# cargo installed another way (nvm, a vendor JDK, rustup) is fine.
command -v node >/dev/null || want+=(nodejs)
command -v npm >/dev/null || want+=(npm)
command -v javac >/dev/null || want+=(default-jdk-headless)
command -v mvn >/dev/null || want+=(maven)
command -v cargo >/dev/null || want+=(cargo)
/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || want+=(python3-venv)
/usr/bin/python3 -c 'import pytest' 2>/dev/null || want+=(python3-pytest)
if [[ "${1:-}" == "--bench" ]]; then
  want+=(ripgrep hyperfine bubblewrap)
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The MCP reference servers the mcp package's tests run (they skip without
# node and npm); pinned, into a cache outside the repository.
if command -v npm >/dev/null; then
  npm_dir="${LITE_AGENT_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lite-agent/npm}"
  npm_pkgs=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31)
  for p in "${npm_pkgs[@]}"; do
    grep -qs "\"version\": \"${p##*@}\"" "$npm_dir/node_modules/${p%@*}/package.json" && continue
    npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error "${npm_pkgs[@]}" >&2 ||
      echo "warning: npm could not install ${npm_pkgs[*]}; the mcp tests will try again" >&2
    break
  done
fi

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
