// Runs inside VS Code: the first workspace folder's .vscode/settings.json, read through VS Code's file
// system when the hook starts and when the evaluator asks. settings_seen says the tab size VS Code's
// configuration has for that folder, for the test; the handler judges the file.
async function settings() {
    const folders = vscode.workspace.workspaceFolders || [];
    if (!folders.length) return {};
    try {
        const bytes = await vscode.workspace.fs.readFile(vscode.Uri.joinPath(folders[0].uri, ".vscode", "settings.json"));
        return JSON.parse(Buffer.from(bytes).toString("utf8"));
    } catch (err) {
        return {};
    }
}

settings().then((data) => socket.emit("send", {event_type: "read_origin_content", message: "settings at the start", data}));
socket.on("evaluate", async () => {
    const folder = (vscode.workspace.workspaceFolders || [])[0];
    const seen = vscode.workspace.getConfiguration("editor", folder && folder.uri).inspect("tabSize") || {};
    socket.emit("send", {event_type: "settings_seen", message: "editor.tabSize by level",
                         data: {user: seen.globalValue, workspace: seen.workspaceValue}});
    socket.emit("send", {event_type: "evaluate_on_completion", message: "settings at completion", data: await settings()});
});
