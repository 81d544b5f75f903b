// Runs inside VS Code (vscode and socket in scope): the theme in force when the evaluator asks, as VS
// Code's configuration has it (workspace settings over user settings). settings_seen says where each
// level stands, for the test; the handler judges evaluate_on_completion only.
socket.on("evaluate", () => {
    const seen = vscode.workspace.getConfiguration().inspect("workbench.colorTheme") || {};
    socket.emit("send", {event_type: "settings_seen", message: "workbench.colorTheme by level",
                         data: {user: seen.globalValue, workspace: seen.workspaceValue}});
    const theme = vscode.workspace.getConfiguration("workbench").get("colorTheme");
    socket.emit("send", {event_type: "evaluate_on_completion", message: "theme at completion: " + theme, data: theme});
});
