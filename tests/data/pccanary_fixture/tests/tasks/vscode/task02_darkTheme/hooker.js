// Runs inside VS Code (vscode and socket in scope, as PC-Canary's IPC hooks): a theme change is reported
// as it happens, the theme in force when the evaluator asks for it at the end.
const theme = () => vscode.workspace.getConfiguration("workbench").get("colorTheme");
vscode.workspace.onDidChangeConfiguration((change) => {
  if (change.affectsConfiguration("workbench.colorTheme")) {
    socket.emit("send", {event_type: "theme_changed", message: "theme is now " + theme(), data: theme()});
  }
});
socket.on("evaluate", () => {
  socket.emit("send", {event_type: "evaluate_on_completion", message: "theme at completion: " + theme(), data: theme()});
});
