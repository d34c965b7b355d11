#!/usr/bin/env bash
# Installs the system packages lite-agent needs, when run as root; otherwise
# prints the exact command to run. Idempotent: installs only what is missing.
#
#   libseccomp-dev  cgo headers and library for the seccomp filter (sandbox)
#   gcc             cgo
#   python3, git    used by the end-to-end tests and the demo
#   tmux            the interactive mode's screen tests (test/, capture-pane)
#   ripgrep, hyperfine, bubblewrap  only for the benchmarks (bench/)
#   the toolchains the real-work tests build projects with (test/
#   realwork_e2e_test.go; each skips naming `make deps` without its own):
#   nodejs npm, python3-venv python3-pytest, default-jdk-headless maven,
#   and cargo unless a cargo (rustup's, say) is already on PATH; and the
#   Maven plugins and junit4 in Debian's /usr/share/maven-repo, with which
#   `mvn package` builds, tests and packages offline (~40 MB, ~25 s here);
#   gradle (Debian 12's 4.4.1, ~62 MB, ~28 s) for the Gradle build test;
#   librust-itoa-dev (a crate in /usr/share/cargo/registry, ~1 MB) for
#   the test that builds against Debian's crates
#
#   --demo  only what `make demo` needs: libseccomp-dev, gcc, python3, git
#   --bench also the benchmark tools
#   a second argument --list prints the packages wanted, one a line, and
#   installs nothing (the Makefile test reads it)
set -euo pipefail

want=(libseccomp-dev gcc python3 git)
mode=${1:-}
if [[ $mode != "--demo" ]]; then
  # Toolchains are judged by the command, not the package: a node, JDK or
  # cargo installed another way (nvm, a vendor JDK, rustup) is fine.
  command -v node >/dev/null || want+=(nodejs)
  command -v npm >/dev/null || want+=(npm)
  command -v javac >/dev/null || want+=(default-jdk-headless)
  command -v mvn >/dev/null || want+=(maven)
  command -v gradle >/dev/null || want+=(gradle)
  command -v cargo >/dev/null || want+=(cargo)
  want+=(tmux)
  want+=(libmaven-resources-plugin-java libmaven-compiler-plugin-java libsurefire-java libmaven-jar-plugin-java junit4)
  # A crate Debian packages, for the cargo-with-Debian's-registry test.
  want+=(librust-itoa-dev)
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || want+=(python3-venv)
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || want+=(python3-pytest)
  if [[ $mode == "--bench" ]]; then
    want+=(ripgrep hyperfine bubblewrap)
  fi
fi

if [[ ${2:-} == "--list" ]]; then
  printf '%s\n' "${want[@]}"
  exit 0
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The MCP reference servers the mcp and end-to-end tests run (they skip
# without them, naming make deps; no test installs anything); pinned in
# internal/mcptest/servers.txt, the list the tests read too, into a cache
# outside the repository.
if [[ $mode != "--demo" ]] && command -v npm >/dev/null; then
  npm_dir="${LITE_AGENT_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lite-agent/npm}"
  npm_pkgs=()
  npm_missing=0
  while read -r pkg version _; do
    [[ -z $pkg || $pkg == \#* ]] && continue
    npm_pkgs+=("$pkg@$version")
    grep -qs "\"version\": \"$version\"" "$npm_dir/node_modules/$pkg/package.json" || npm_missing=1
  done <"$(dirname "$0")/../internal/mcptest/servers.txt"
  if [[ $npm_missing -eq 1 ]]; then
    mkdir -p "$npm_dir"
    npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error "${npm_pkgs[@]}" >&2 ||
      echo "warning: npm could not install ${npm_pkgs[*]}; the tests that run them will skip" >&2
  fi
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
