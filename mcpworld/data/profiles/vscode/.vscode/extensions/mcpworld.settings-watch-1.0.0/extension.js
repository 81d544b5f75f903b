// mcpworld's settings watch. Desktop VS Code applies a User/settings.json edited on disk (by a script,
// a terminal, an MCP file tool) to the running editor at once; code-server's browser workbench reads it
// only when it starts. This extension runs in the extension host, beside the file: it watches the User
// folder and, when the file's settings differ from the editor's, writes one of them back with the value
// the file already holds. That write changes nothing on disk, and VS Code re-reads the whole file after
// it, so every changed setting applies, as the desktop's own watcher would.
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");

// settings.json is JSON with comments and trailing commas
function parseJsonc(text) {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === "\\") { out += text[++i] || ""; } else if (c === "\"") { inString = false; }
    } else if (c === "\"") {
      inString = true; out += c;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      i = text.indexOf("*/", i + 2); if (i < 0) break; i++;
    } else {
      out += c;
    }
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

function readSettings(file) {
  try {
    const text = fs.readFileSync(file, "utf8");
    const value = text.trim() ? parseJsonc(text) : {};
    return value && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch (err) {
    return undefined;  // absent, or caught half-written: the next change event reads it again
  }
}

function activate(context) {
  const userDir = path.dirname(path.dirname(context.globalStorageUri.fsPath));  // <user-data-dir>/User
  const file = path.join(userDir, "settings.json");
  let known = readSettings(file) || {};
  let timer;

  async function apply() {
    const now = readSettings(file);
    if (now === undefined) return;
    const config = vscode.workspace.getConfiguration();
    const keys = [...new Set([...Object.keys(known), ...Object.keys(now)])];
    const stale = keys.filter((key) => {
      const seen = config.inspect(key);
      return JSON.stringify(seen ? seen.globalValue : undefined) !== JSON.stringify(now[key]);
    });
    known = now;
    if (stale.length) {
      await config.update(stale[0], now[stale[0]], vscode.ConfigurationTarget.Global);
    }
  }

  fs.mkdirSync(userDir, { recursive: true });
  const watcher = fs.watch(userDir, (_, name) => {
    if (name && name !== "settings.json") return;
    clearTimeout(timer);
    timer = setTimeout(() => apply().catch((err) => console.error("mcpworld settings watch:", err)), 100);
  });
  context.subscriptions.push({ dispose: () => { clearTimeout(timer); watcher.close(); } });
  apply().catch(() => {});  // an edit made while the editor started
}

function deactivate() {}

module.exports = { activate, deactivate };
