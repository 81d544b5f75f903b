#!/bin/bash
# `code` on an mcpworld desktop: VS Code (code-server) served on this desktop's port, shown in a
# Chromium app window. Settings live where VS Code keeps them (~/.config/Code/User/settings.json),
# extensions in ~/.vscode/extensions, unless the command line names others as VS Code's does
# (--user-data-dir, --extensions-dir: PC-Canary starts `code --user-data-dir=/workspace/…`; our
# extensions, the probe and the settings watch, are linked into another extensions folder). A settings.json edited on
# disk applies to the running editor as in desktop VS Code. Flags only
# desktop VS Code knows (--no-sandbox, --new-window …) are ignored. Set by the shim:
# MCPWORLD_PROGRAM (code-server), VSCODE_PORT.
# code-server has no login (--auth none: its window must open as VS Code's does), so it never listens
# on TCP: it serves on a unix socket of the desktop's runtime folder (mode 600, this account's), and
# the desktop relays VSCODE_PORT to it for the harness and this account's processes only
# (conf/app/vscode.yaml `sockets`, env/local/environment.py; docs/isolation.md).
set -u
server="$MCPWORLD_PROGRAM"
port="$VSCODE_PORT"
sock="${XDG_RUNTIME_DIR:?the desktop sets XDG_RUNTIME_DIR}/vscode.sock"
data="$HOME/.config/Code"
extensions="$HOME/.vscode/extensions"
passed=()   # flags code-server takes as VS Code does
cli=false   # command-line use (suites list and install extensions this way)
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --user-data-dir=*) data="${1#*=}" ;;
    --user-data-dir) data="${2:-$data}"; shift ;;
    --extensions-dir=*) extensions="${1#*=}" ;;
    --extensions-dir) extensions="${2:-$extensions}"; shift ;;
    --locale=*|--enable-proposed-api=*) passed+=("$1") ;;
    --locale|--enable-proposed-api) passed+=("$1" "${2:-}"); shift ;;
    --install-extension|--uninstall-extension) cli=true; passed+=("$1" "${2:-}"); shift ;;
    --list-extensions|--show-versions|--version|-v|--help|-h|--force) cli=true; passed+=("$1") ;;
    -*) ;;
    *) paths+=("$1") ;;
  esac
  shift
done
data="$(realpath -m "${data/#\~/$HOME}")"  # a "~" inside --flag=~/x was left to us
extensions="$(realpath -m "${extensions/#\~/$HOME}")"
mkdir -p "$data/User" "$extensions"
for ours in "$HOME"/.vscode/extensions/mcpworld.*; do  # the probe and the settings watch go where extensions are
  [ -d "$ours" ] && [ ! -e "$extensions/${ours##*/}" ] && ln -s "$ours" "$extensions/${ours##*/}"
done
dirs=(--user-data-dir "$data" --extensions-dir "$extensions")
if $cli; then
  exec "$server" "${dirs[@]}" "${passed[@]}"
fi
state="${TMPDIR:-/tmp}/code-server.dirs"  # this desktop's server: its folders and its process
up() { curl -sf -o /dev/null --unix-socket "$sock" "http://localhost/healthz"; }
if up && [ -f "$state" ] && [ "$(head -n 2 "$state")" != "$(printf '%s\n%s' "$data" "$extensions")" ]; then
  # other folders are another VS Code instance, as on the desktop: this desktop serves one at a time
  kill "$(sed -n 3p "$state")" 2>/dev/null
  for _ in $(seq 100); do up || break; sleep 0.1; done
fi
if ! up; then
  # on-disk edits of User/settings.json reach the running editor through the vscode profile's
  # mcpworld.settings-watch extension (code-server itself reads the file only at start)
  setsid "$server" "${dirs[@]}" "${passed[@]}" --auth none --socket "$sock" --socket-mode 600 --disable-telemetry \
    --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    >"${TMPDIR:-/tmp}/code-server.log" 2>&1 </dev/null &
  printf '%s\n%s\n%s\n' "$data" "$extensions" "$!" >"$state"
  for _ in $(seq 300); do up && break; sleep 0.1; done
fi
folder="$HOME"
for arg in "${paths[@]}"; do  # the first path argument: a folder opens as the workspace, a file's folder too
  path="$(realpath -m "$arg")"
  if [ -d "$path" ]; then folder="$path"; else folder="$(dirname "$path")"; fi
  break
done
exec /usr/bin/chromium --app="http://127.0.0.1:$port/?folder=$folder" --user-data-dir="$HOME/.config/code-window" \
  --no-first-run --no-default-browser-check --password-store=basic --disable-background-networking \
  --disable-component-update --disable-sync --disable-breakpad --disable-gpu --force-renderer-accessibility
