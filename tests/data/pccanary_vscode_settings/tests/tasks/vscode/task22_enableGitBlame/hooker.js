// Runs inside VS Code: the git blame editor decoration as VS Code's configuration has it when the
// evaluator asks. settings_seen says where each level stands, for the test.
socket.on("evaluate", () => {
    const seen = vscode.workspace.getConfiguration().inspect("git.blame.editorDecoration.enabled") || {};
    socket.emit("send", {event_type: "settings_seen", message: "git.blame.editorDecoration.enabled by level",
                         data: {user: seen.globalValue, workspace: seen.workspaceValue}});
    socket.emit("send", {event_type: "evaluate_on_completion", message: "blame decoration at completion",
                         blameon: vscode.workspace.getConfiguration("git").get("blame.editorDecoration.enabled", false)});
});
