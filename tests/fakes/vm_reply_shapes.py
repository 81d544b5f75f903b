"""The shape of a VM server's replies to the requests env=vm makes: status code, content type, and
the JSON keys or body kind of each. Run against OSWorld's real server it made
tests/data/vm/osworld_server_replies.json; tests compare the fake (tests/fakes/osworld_vm.py) with it.

    python tests/fakes/vm_reply_shapes.py URL > shapes.json     (the server's home must be writable)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx

PROBE_FILE = "~/mcpworld-shape-probe.txt"
WALLPAPER = "/home/user/mcpworld-shape-wallpaper.png"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5d2ad2a0000000049454e44ae426082"
)


def _shape(reply: httpx.Response) -> dict[str, Any]:
    kind = reply.headers.get("content-type", "").split(";")[0]
    shape: dict[str, Any] = {"status": reply.status_code, "type": kind}
    if kind == "application/json":
        body = reply.json()
        shape["keys"] = sorted(body) if isinstance(body, dict) else type(body).__name__
    elif kind == "image/png":
        shape["png"] = reply.content[:8] == b"\x89PNG\r\n\x1a\n"
    return shape


def reply_shapes(url: str) -> dict[str, dict[str, Any]]:
    with httpx.Client(base_url=url, timeout=60) as http:
        json_post = {"headers": {"Content-Type": "application/json"}}

        def command(body: dict[str, Any]) -> dict[str, Any]:
            return {"content": json.dumps(body), **json_post}

        requests: dict[str, tuple[str, str, dict[str, Any]]] = {
            "screenshot": ("GET", "/screenshot", {}),
            "screen_size": ("POST", "/screen_size", {}),
            "platform": ("GET", "/platform", {}),
            "execute ok": ("POST", "/execute", command({"command": ["echo", "hi"], "shell": False})),
            "execute shell": ("POST", "/execute", command({"command": "echo hi; exit 3", "shell": True})),
            "execute missing program": ("POST", "/execute", command({"command": ["no-such-program-x"]})),
            "setup execute": ("POST", "/setup/execute", command({"command": ["true"]})),
            "upload": ("POST", "/setup/upload", {"data": {"file_path": PROBE_FILE}, "files": {"file_data": ("f", b"probe")}}),
            "file": ("POST", "/file", {"data": {"file_path": PROBE_FILE}}),
            "file missing": ("POST", "/file", {"data": {"file_path": "~/no-such-file-x"}}),
            "list_directory": ("POST", "/list_directory", {"json": {"path": "/tmp"}}),
            "list_directory missing": ("POST", "/list_directory", {"json": {"path": "/no-such-dir-x"}}),
            "launch": ("POST", "/setup/launch", {"json": {"command": ["true"], "shell": False}}),
            "open_file missing": ("POST", "/setup/open_file", {"json": {"path": "~/no-such-file-x"}}),
            "activate_window": ("POST", "/setup/activate_window", {"json": {"window_name": "no-such-window-x"}}),
            "close_window": ("POST", "/setup/close_window", {"json": {"window_name": "no-such-window-x"}}),
        }
        shapes = {name: _shape(http.request(method, path, **kwargs)) for name, (method, path, kwargs) in requests.items()}
        # what OSWorld's getters ask: the focused terminal (none is open), a window's size, the wallpaper
        terminal = http.get("/terminal")
        shapes["terminal"] = {**_shape(terminal), "values": {"output": terminal.json().get("output")}}
        shapes["window_size missing"] = _shape(http.post("/window_size", data={"app_class_name": "no-such-class-x"}))
        shapes["window_size no name"] = _shape(http.post("/window_size", data={}))

        def wallpaper(uri: str) -> dict[str, Any]:
            http.post(
                "/execute",
                content=json.dumps({"command": ["gsettings", "set", "org.gnome.desktop.background", "picture-uri", uri]}),
                **json_post,
            )
            return _shape(http.post("/wallpaper"))

        http.post("/setup/upload", data={"file_path": WALLPAPER}, files={"file_data": ("f", PNG)})
        shapes["wallpaper"] = wallpaper(f"file://{WALLPAPER}")
        shapes["wallpaper missing"] = wallpaper("file:///home/user/no-such-wallpaper-x.png")
        body = http.post("/execute", content=json.dumps({"command": "echo hi; exit 3", "shell": True}), **json_post).json()
        shapes["execute shell"]["values"] = {"output": body["output"], "returncode": body["returncode"]}
        shapes["file"]["body"] = http.post("/file", data={"file_path": PROBE_FILE}).text
        return shapes


if __name__ == "__main__":
    json.dump(reply_shapes(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
    print()
