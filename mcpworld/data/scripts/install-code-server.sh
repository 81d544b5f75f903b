#!/bin/bash
# VS Code for the desktop: code-server (npm), installed so it runs offline. Its own postinstall
# fetches a git dependency from GitHub; here the registry's @vscode/proxy-agent is used instead and
# the native modules are compiled (no prebuilt binaries without GitHub). Idempotent.
#   mcpworld/data/scripts/install-code-server.sh [PREFIX]   (default: $MCPWORLD_HOME/.apps/code-server;
#   MCPWORLD_HOME: the checkout's root unless set, see mcpworld/core/paths.py)
set -euo pipefail
version=4.96.4  # the last release for Node 20 (Debian's nodejs is older; later ones want 22+)
prefix="$(realpath -m "${1:-${MCPWORLD_HOME:-$(dirname "$0")/../../..}/.apps/code-server}")"
node_major="$(node --version 2>/dev/null | sed -n 's/^v\([0-9]*\).*/\1/p')"
if [ "${node_major:-0}" -lt 20 ]; then  # VS Code tasks are then skipped, naming this script
  echo "code-server $version needs Node.js 20 or newer (found ${node_major:-none}): VS Code tasks will be skipped" >&2
  exit 0
fi
bin="$prefix/node_modules/.bin/code-server"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$version "; then
  echo "code-server $version: up to date"; exit 0
fi
rm -rf "$prefix" && mkdir -p "$prefix"
npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$prefix" "code-server@$version"
cd "$prefix/node_modules/code-server/lib/vscode"
mv npm-shrinkwrap.json npm-shrinkwrap.json.orig
npm_config_unsafe_perm=true npm install --silent --omit=dev --no-audit --no-fund
ln -sfn node_modules node_modules.asar
ln -sfn code-linux.sh bin/remote-cli/code-server
cd "$prefix" && npm rebuild --silent argon2
"$bin" --version | head -1
