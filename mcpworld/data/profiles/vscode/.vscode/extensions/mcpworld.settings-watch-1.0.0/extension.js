// mcpworld's settings watch. Desktop VS Code applies a User/settings.json edited on disk (by a script,
// a terminal, an MCP file tool) to the running editor at once; code-server's browser workbench reads it
// only when it starts. This extension runs in the extension host, beside the file: it watches the User
// folder and, when the file's settings differ from the editor's, has VS Code write one setting back with
// the value the file already holds. That write changes nothing on disk, and VS Code re-reads the whole
// file after it, so every changed setting applies, as the desktop's own watcher would. VS Code refuses to
// write a setting no installed extension declares (an uninstalled formatter's "prettier.semi"): the next
// one is tried, so such a key never holds the others back. Workspace settings (.vscode/settings.json)
// need none of this: code-server watches them itself, and they override these, as on the desktop.
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

// a setting VS Code can be asked to write without changing the file: one the file no longer holds (its
// removal edits nothing), then one with a plain value (written as the file has it), then any other
function candidates(stale, now) {
  const plain = (key) => now[key] === null || typeof now[key] !== "object";
  const held = Object.keys(now);
  return [...stale.filter((key) => !(key in now)), ...stale.filter((key) => key in now && plain(key)),
          ...stale.filter((key) => key in now && !plain(key)), ...held.filter((key) => !stale.includes(key) && plain(key))];
}

function activate(context) {
  const userDir = path.dirname(path.dirname(context.globalStorageUri.fsPath));  // <user-data-dir>/User
  const file = path.join(userDir, "settings.json");
  let known = readSettings(file) || {};
  let timer;
  let queue = Promise.resolve();  // one apply at a time: each reads the file as it is then

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
    if (!stale.length) return;
    let refused;
    for (const key of candidates(stale, now)) {
      try {
        await config.update(key, now[key], vscode.ConfigurationTarget.Global);
        return;
      } catch (err) {
        refused = err;  // not a setting VS Code knows: the next one re-reads the file as well
      }
    }
    throw refused;
  }

  function schedule() {
    queue = queue.then(apply).catch((err) => console.error("mcpworld settings watch:", err));
  }

  fs.mkdirSync(userDir, { recursive: true });
  const watcher = fs.watch(userDir, (_, name) => {
    if (name && name !== "settings.json") return;
    clearTimeout(timer);
    timer = setTimeout(schedule, 100);
  });
  context.subscriptions.push({ dispose: () => { clearTimeout(timer); watcher.close(); } });
  schedule();  // an edit made while the editor started
}

function deactivate() {}

module.exports = { activate, deactivate };
