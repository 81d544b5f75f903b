// Runs inside VS Code: the sandbox-wide settings file, read through VS Code's file system when the hook
// starts and when the evaluator asks ({} while it is absent or not JSON).
const SETTINGS = "/workspace/.mcpworld/vscode/.vscode/settings.json";

async function settings() {
    try {
        const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(SETTINGS));
        return JSON.parse(Buffer.from(bytes).toString("utf8"));
    } catch (err) {
        return {};
    }
}

settings().then((data) => socket.emit("send", {event_type: "read_origin_content", message: "settings at the start", data}));
socket.on("evaluate", async () => {
    socket.emit("send", {event_type: "evaluate_on_completion", message: "settings at completion", data: await settings()});
});
