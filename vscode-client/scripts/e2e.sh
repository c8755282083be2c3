#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3),
# driven by Playwright in Debian's Chromium. Works on a fresh Debian 12 machine as root, offline except for
# apt and the npm registry.
#
#   scripts/e2e.sh                 install what is missing, build the .vsix, run the scenario
#   scripts/e2e.sh --install-only  only the install steps (apt, ripgrep cache, npm deps, code-server)
#   scripts/e2e.sh --no-install    skip the install steps (everything already there)
#
# Environment:
#   SASS_LSP_PYTHON  Python with sass_lsp + pygls installed (default: ../.venv/bin/python, then python3)
#   E2E_CUASM        the .cuasm file to open (default: triton_add.cuasm of the bundled corpus,
#                    sass_lsp/corpus/sm_90)
#   E2E_SUGGEST_CUASM  the .cuasm "Suggest reorders" runs on (default: the bundled corpus's
#                    mm_f16_64x64x32.cuasm, which the performance model predicts the policy speeds up)
#   E2E_PORT         code-server port on 127.0.0.1 (default 8765)
#   E2E_CACHE        where code-server is installed, kept between runs (default: ~/.cache/sass-lsp-e2e)
#   E2E_POLICY       sass-lsp.policyModelPath for the run (default: unset, i.e. the checkpoint bundled with the server)
#   E2E_UPDATE_SCREENSHOTS=1  also copy the README's screenshot (suggestion.png) to docs/screenshots/
#
# Every step's wall time is printed as "[time] <step> <seconds>s" and collected in artifacts/timings.txt.
# Screenshots and logs go to artifacts/. Processes started here are always stopped on exit.
set -euo pipefail

CLIENT_DIR="$(cd "$(dirname "$0")/.." && pwd)"
REPO_DIR="$(cd "$CLIENT_DIR/.." && pwd)"
CODE_SERVER_VERSION=4.100.3
# code-server's install (300 MB, minutes to build) outlives the checkout: CI starts from a clean one
CS_DIR="${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sass-lsp-e2e}/code-server-$CODE_SERVER_VERSION"
ART_DIR="$CLIENT_DIR/artifacts"            # git-ignored
PORT="${E2E_PORT:-8765}"
MODE="${1:-all}"

mkdir -p "$CS_DIR" "$ART_DIR"
TIMINGS="$ART_DIR/timings.txt"
echo "# $(date -u +%FT%TZ) scripts/e2e.sh ${1:-} on $(nproc) cores" >>"$TIMINGS"

step() {  # step NAME COMMAND...: run and time one step
  local name="$1"; shift
  local t0 t1
  echo "==> $name"
  local rc=0
  t0=$(date +%s.%N)
  "$@" || rc=$?
  t1=$(date +%s.%N)
  printf '[time] %-28s %7.1fs%s\n' "$name" "$(awk "BEGIN{print $t1 - $t0}")" "$([ $rc -ne 0 ] && echo "  (FAILED rc=$rc)")" | tee -a "$TIMINGS"
  return $rc
}

# ---------------------------------------------------------------------------------------------- install

APT_PACKAGES=(build-essential python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev
              ripgrep chromium bc curl)

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then echo "apt packages already installed"; return; fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

seed_ripgrep_cache() {
  # @vscode/ripgrep's postinstall downloads rg from GitHub; pre-seed its cache with Debian's rg instead
  # (cache dir: vscode-ripgrep-cache-<package version> under os.tmpdir(); see toolchain notes §5).
  local tmp; tmp="$(node -p 'require("os").tmpdir()')"
  local v
  for v in 1.15.11; do  # the @vscode/ripgrep version code-server 4.100.3 pins
    local dir="$tmp/vscode-ripgrep-cache-$v"
    mkdir -p "$dir"
    for asset in ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz; do
      [ -f "$dir/$asset" ] || tar czf "$dir/$asset" -C "$(dirname "$(command -v rg)")" rg
    done
  done
}

install_npm_deps() {
  cd "$CLIENT_DIR"
  if [ node_modules/.package-lock.json -nt package-lock.json ] && [ -x node_modules/.bin/vsce ]; then
    echo "node_modules up to date"; return
  fi
  npm ci --no-audit --no-fund
}

install_code_server() {
  local bin="$CS_DIR/node_modules/.bin/code-server"
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; then
    echo "code-server $CODE_SERVER_VERSION already installed"; return
  fi
  cd "$CS_DIR"
  [ -f package.json ] || echo '{"name":"e2e-code-server","private":true}' >package.json
  # root + npm 11: --unsafe-perm for the postinstall, yes=true for node-pty's `npx node-gyp`
  npm_config_yes=true npm_config_unsafe_perm=true \
    npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION" >"$ART_DIR/code-server-install.log" 2>&1 \
    || { tail -50 "$ART_DIR/code-server-install.log"; return 1; }
  "$bin" --version
}

if [ "$MODE" != "--no-install" ]; then
  step "apt packages" install_apt
  step "ripgrep cache" seed_ripgrep_cache
  step "npm deps (extension)" install_npm_deps
  step "code-server install" install_code_server
fi
[ "$MODE" = "--install-only" ] && exit 0

# ---------------------------------------------------------------------------------------------- build

step "build + package vsix" bash -c "cd '$CLIENT_DIR' && npm run --silent package"
VSIX="$(ls -t "$CLIENT_DIR"/*.vsix | head -1)"

# ---------------------------------------------------------------------------------------------- run

# per-run state outside the repository (a workspace inside a git checkout makes VS Code offer to open the repo)
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/sass-lsp-e2e.XXXXXX")"
CS_PID=""
cleanup() {
  local rc=$?
  if [ -n "$CS_PID" ] && kill -0 "$CS_PID" 2>/dev/null; then
    # code-server was started with setsid: stop its whole process group (its own children only)
    kill -TERM -- "-$CS_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$CS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$CS_PID" 2>/dev/null || true
  fi
  [ -f "$RUN_DIR/code-server.log" ] && cp "$RUN_DIR/code-server.log" "$ART_DIR/" || true
  # the extension's output channels: the server log and the LSP message trace
  find "$RUN_DIR/data/logs" -name '*SASS Language Server.log' -exec cp {} "$ART_DIR/sass-lsp-server.log" \; 2>/dev/null || true
  find "$RUN_DIR/data/logs" -name '*SASS Language Server Trace.log' -exec cp {} "$ART_DIR/sass-lsp-trace.log" \; 2>/dev/null || true
  find "$RUN_DIR/data/logs" -name 'remoteexthost.log' -exec cp {} "$ART_DIR/exthost.log" \; 2>/dev/null || true
  rm -rf "$RUN_DIR"
  exit $rc
}
trap cleanup EXIT INT TERM

PYTHON="${SASS_LSP_PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x "$REPO_DIR/.venv/bin/python" ]; then PYTHON="$REPO_DIR/.venv/bin/python"; else PYTHON="$(command -v python3)"; fi
fi
echo "server python: $PYTHON"

WS="$RUN_DIR/workspace"
mkdir -p "$WS" "$RUN_DIR/data/User" "$RUN_DIR/ext" "$RUN_DIR/xdg-config" "$RUN_DIR/xdg-data" "$RUN_DIR/xdg-cache"
CORPUS="$REPO_DIR/sass_lsp/corpus/sm_90"
CUASM="${E2E_CUASM:-$CORPUS/triton_add.cuasm}"
if [ -f "$CUASM" ]; then
  cp "$CUASM" "$WS/kernel.cuasm"
else
  "$PYTHON" -m sass_lsp disasm "$REPO_DIR/sass_lsp/examples/triton_add.cubin" -o "$WS/kernel.cuasm"
fi
# a kernel the shipped models have suggestions for (sass-lsp suggest)
SUGGEST_CUASM="${E2E_SUGGEST_CUASM:-$CORPUS/mm_f16_64x64x32.cuasm}"
cp "$SUGGEST_CUASM" "$WS/suggest.cuasm"
cp "$REPO_DIR/sass_lsp/examples/triton_add.cubin" "$WS/add.cubin"   # disassembles to add.cuasm

cat >"$RUN_DIR/data/User/settings.json" <<EOF
{
  "sass-lsp.pythonPath": "$PYTHON",
  "sass-lsp.trace.server": "messages",
  "sass-lsp.policyModelPath": "${E2E_POLICY:-}",
  "files.autoSave": "off",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "editor.hover.delay": 300,
  "window.commandCenter": false,
  "git.enabled": false,
  "git.openRepositoryInParentFolders": "never",
  "github.gitAuthentication": false
}
EOF

export XDG_CONFIG_HOME="$RUN_DIR/xdg-config" XDG_DATA_HOME="$RUN_DIR/xdg-data" XDG_CACHE_HOME="$RUN_DIR/xdg-cache"
CS="$CS_DIR/node_modules/.bin/code-server"
CS_ARGS=(--auth none --disable-telemetry --disable-update-check --disable-workspace-trust
         --user-data-dir "$RUN_DIR/data" --extensions-dir "$RUN_DIR/ext")

step "install vsix" "$CS" "${CS_ARGS[@]}" --install-extension "$VSIX"

start_code_server() {
  setsid "$CS" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" "$WS" >"$RUN_DIR/code-server.log" 2>&1 &
  CS_PID=$!
  for _ in $(seq 600); do
    curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$CS_PID" 2>/dev/null || { cat "$RUN_DIR/code-server.log"; return 1; }
    sleep 0.1
  done
  echo "code-server did not answer /healthz"; return 1
}
step "start code-server" start_code_server

export E2E_URL="http://127.0.0.1:$PORT/?folder=$WS" E2E_WORKSPACE="$WS" E2E_ARTIFACTS="$ART_DIR"
rm -f "$ART_DIR"/*.png "$ART_DIR"/e2e-report.*   # a picture from an earlier run must never pass for this one's
step "playwright scenario" node "$CLIENT_DIR/e2e/scenario.js"
if [ "${E2E_UPDATE_SCREENSHOTS:-0}" = 1 ]; then
  cp "$ART_DIR/suggestion.png" "$REPO_DIR/docs/screenshots/suggestion.png"
  echo "updated docs/screenshots/suggestion.png"
fi
