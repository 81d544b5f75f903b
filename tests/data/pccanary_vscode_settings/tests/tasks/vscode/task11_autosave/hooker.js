// Runs inside VS Code: auto save as VS Code's configuration has it when the evaluator asks.
socket.on("evaluate", () => {
    const files = vscode.workspace.getConfiguration("files");
    socket.emit("send", {event_type: "evaluate_on_completion", message: "auto save at completion",
                         config: {autoSave: files.get("autoSave"), autoSaveDelay: files.get("autoSaveDelay")}});
});
