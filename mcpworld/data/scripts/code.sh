#!/bin/bash
# `code` on an mcpworld desktop: VS Code (code-server) served on this desktop's port, shown in a
# Chromium app window. Settings live where VS Code keeps them (~/.config/Code/User/settings.json),
# extensions in ~/.vscode/extensions. Set by the shim: MCPWORLD_PROGRAM (code-server), VSCODE_PORT.
set -u
server="$MCPWORLD_PROGRAM"
port="$VSCODE_PORT"
mkdir -p "$HOME/.config/Code" "$HOME/.vscode/extensions"
dirs=(--user-data-dir "$HOME/.config/Code" --extensions-dir "$HOME/.vscode/extensions")
case "${1:-}" in  # command-line use (suites list and install extensions this way)
  --install-extension|--uninstall-extension|--list-extensions|--show-versions|--version|-v|--help|-h)
    exec "$server" "${dirs[@]}" "$@" ;;
esac
up() { curl -sf -o /dev/null "http://127.0.0.1:$port/healthz"; }
if ! up; then
  setsid "$server" "${dirs[@]}" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry \
    --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    >"${TMPDIR:-/tmp}/code-server.log" 2>&1 </dev/null &
  for _ in $(seq 300); do up && break; sleep 0.1; done
fi
folder="$HOME"
for arg in "$@"; do  # the first path argument: a folder opens as the workspace, a file's folder too
  case "$arg" in -*) continue ;; esac
  path="$(realpath -m "$arg")"
  if [ -d "$path" ]; then folder="$path"; else folder="$(dirname "$path")"; fi
  break
done
exec /usr/bin/chromium --app="http://127.0.0.1:$port/?folder=$folder" --user-data-dir="$HOME/.config/code-window" \
  --no-first-run --no-default-browser-check --password-store=basic --disable-background-networking \
  --disable-component-update --disable-sync --disable-breakpad --disable-gpu --force-renderer-accessibility
