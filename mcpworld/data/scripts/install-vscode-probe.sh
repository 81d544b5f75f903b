#!/bin/bash
# The VS Code probe's Socket.IO client (npm), which mcpworld's extension in the vscode profile loads to
# reach the episode's event sink (profiles/vscode/.vscode/extensions/mcpworld.probe-1.0.0). Idempotent.
#   mcpworld/data/scripts/install-vscode-probe.sh [PREFIX]   (default: $MCPWORLD_HOME/.apps/vscode-probe;
#   MCPWORLD_HOME: the checkout's root unless set, see mcpworld/core/paths.py)
set -euo pipefail
version=4.8.4
prefix="$(realpath -m "${1:-${MCPWORLD_HOME:-$(dirname "$0")/../../..}/.apps/vscode-probe}")"
if grep -qs "\"version\": \"$version\"" "$prefix/node_modules/socket.io-client/package.json"; then
  echo "socket.io-client $version: up to date"; exit 0
fi
mkdir -p "$prefix"
npm install --silent --no-audit --no-fund --prefix "$prefix" "socket.io-client@$version"
echo "socket.io-client $version: installed in $prefix"
