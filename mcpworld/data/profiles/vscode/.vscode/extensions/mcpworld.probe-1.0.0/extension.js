// mcpworld's VS Code probe: connects to the episode's event sink (MCPWORLD_SINK_URL, sending the episode's
// MCPWORLD_SINK_TOKEN as a Bearer header on the WebSocket handshake, as mcpworld.core.listener wants), runs
// the hook source the sink injects with the `vscode` API and the socket in scope (as PC-Canary's hooks
// expect: socket.on("evaluate", …), socket.emit("send", {event_type, …})), and says start_success once the
// hook runs. Outside an mcpworld episode it does nothing.
const vscode = require("vscode");

function activate(context) {
  const url = process.env.MCPWORLD_SINK_URL;
  const token = process.env.MCPWORLD_SINK_TOKEN;
  const client = process.env.MCPWORLD_SOCKETIO_CLIENT;
  if (!url || !token || !client) {
    return;
  }
  const { io } = require(client);
  const socket = io(url, { extraHeaders: { Authorization: `Bearer ${token}` }, transports: ["websocket"],
                          reconnectionDelay: 200 });
  socket.on("inject", (source) => {
    try {
      new Function("vscode", "socket", "require", "console", source)(vscode, socket, require, console);
      socket.emit("send", { event_type: "start_success", message: "the hook runs in VS Code" });
    } catch (err) {
      socket.emit("send", { event_type: "error", error_type: "hook_failed", message: String(err && err.stack || err) });
    }
  });
  context.subscriptions.push({ dispose: () => socket.close() });
}

function deactivate() {}

module.exports = { activate, deactivate };
