"""The HTTP API of a suite's own VM server, as its harness calls it: OSWorld's
``desktop_env/server/main.py`` (Flask, port 5000 on its Ubuntu VM) and Windows Agent Arena's variant
on its Windows 11 VM. One method per endpoint; a server that does not answer, or answers an error,
is the environment's failure (InfraError), never the agent's."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx

from mcpworld.core.errors import InfraError


@dataclass(frozen=True)
class VmDialect:
    """What differs between the suites' servers."""

    kind: str
    home: str  # the VM account's home, where the suite's paths point
    python: str  # the interpreter the harness names in /execute
    health: str  # the GET endpoint the harness polls until the VM is up
    separator: str  # path separator on the VM


DIALECTS = {
    # OSWorld's harness names "python" (the VM links it to python3); python3 is on every Ubuntu
    "osworld": VmDialect("osworld", "/home/user", "python3", "/screenshot", "/"),
    "waa": VmDialect("waa", "C:\\Users\\Docker", "python", "/probe", "\\"),
}


@dataclass
class Executed:
    returncode: int
    output: str
    error: str


class VmServer:
    """A client of one VM's server. Thread-compatible (one per environment)."""

    def __init__(self, url: str, kind: str = "osworld", timeout_s: float = 120.0):
        if kind not in DIALECTS:
            raise ValueError(f"env.vm.kind={kind!r}: known kinds are {', '.join(DIALECTS)}")
        self.url = url.rstrip("/")
        self.dialect = DIALECTS[kind]
        self.http = httpx.Client(base_url=self.url, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            raise InfraError(
                f"the {self.dialect.kind} VM server at {self.url} does not answer {path} ({type(exc).__name__}: {exc})"
            ) from None

    def _ok(self, reply: httpx.Response, path: str) -> httpx.Response:
        if reply.status_code != 200:
            raise InfraError(
                f"the {self.dialect.kind} VM server at {self.url} refused {path}: {reply.status_code} {reply.text[:300]}"
            )
        return reply

    # --- readiness ---------------------------------------------------------------------------------
    def answers(self) -> bool:
        try:
            return self.http.get(self.dialect.health, timeout=10.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.answers():
            if time.monotonic() > deadline:
                raise InfraError(
                    f"the {self.dialect.kind} VM server at {self.url} did not answer "
                    f"{self.dialect.health} within {timeout_s:.0f}s"
                )
            time.sleep(1.0)

    # --- observation -------------------------------------------------------------------------------
    def screenshot(self) -> bytes:
        return self._ok(self._request("GET", "/screenshot"), "/screenshot").content

    def accessibility(self) -> str:
        reply = self._ok(self._request("GET", "/accessibility"), "/accessibility")
        return str(reply.json()["AT"])

    def terminal(self) -> str | None:
        """What the VM's focused terminal shows (OSWorld: the accessibility text of the focused GNOME
        Terminal tab of the active window), None when no terminal is active. A server that cannot read
        it (WAA's Windows: "not implemented"; AT-SPI failed) is the environment's failure."""
        reply = self._ok(self._request("GET", "/terminal"), "/terminal")
        output = reply.json().get("output")
        return None if output is None else str(output)

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        """``{"width", "height"}`` of the first window whose WM class (instance or class) is
        ``app_class_name``; None when there is none (the server then fails its reply: 500)."""
        reply = self._request("POST", "/window_size", data={"app_class_name": app_class_name})
        if reply.status_code == 500:
            return None
        size = self._ok(reply, "/window_size").json()
        return {"width": int(size["width"]), "height": int(size["height"])}

    def wallpaper(self) -> bytes | None:
        """The desktop's wallpaper image file (OSWorld: GNOME's picture-uri), None when none is set or
        its file is gone (404, or 500 when the file cannot be sent)."""
        reply = self._request("POST", "/wallpaper")
        if reply.status_code in (404, 500):
            return None
        return self._ok(reply, "/wallpaper").content

    def screen_size(self) -> tuple[int, int]:
        size = self._ok(self._request("POST", "/screen_size"), "/screen_size").json()
        return int(size["width"]), int(size["height"])

    # --- commands ----------------------------------------------------------------------------------
    def execute(self, command: list[str] | str, shell: bool = False, setup: bool = False) -> Executed:
        """Run a command on the VM and wait (the server's own bound is 120 s)."""
        path = "/setup/execute" if setup else "/execute"
        reply = self._request(
            "POST", path, content=json.dumps({"command": command, "shell": shell}), headers={"Content-Type": "application/json"}
        )
        if reply.status_code == 500:  # the program could not be started (not found …)
            message = reply.json().get("message", reply.text[:300])
            return Executed(127, "", str(message))
        body = self._ok(reply, path).json()
        return Executed(int(body.get("returncode", 0)), str(body.get("output", "")), str(body.get("error", "")))

    def python(self, code: str) -> Executed:
        return self.execute([self.dialect.python, "-c", code])

    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        self._ok(self._request("POST", "/setup/launch", json={"command": command, "shell": shell}), "/setup/launch")

    def open_file(self, path: str) -> None:
        self._ok(self._request("POST", "/setup/open_file", json={"path": path}), "/setup/open_file")

    def window(self, verb: str, name: str, strict: bool = False, by_class: bool = False) -> None:
        path = f"/setup/{verb}_window"
        self._ok(self._request("POST", path, json={"window_name": name, "strict": strict, "by_class": by_class}), path)

    # --- files -------------------------------------------------------------------------------------
    def file(self, path: str) -> bytes:
        reply = self._request("POST", "/file", data={"file_path": path})
        if reply.status_code == 404:
            raise FileNotFoundError(path)
        return self._ok(reply, "/file").content

    def upload(self, path: str, data: bytes) -> None:
        self._ok(
            self._request("POST", "/setup/upload", data={"file_path": path}, files={"file_data": ("file", data)}), "/setup/upload"
        )

    def list_directory(self, path: str) -> list[str]:
        reply = self._request("POST", "/list_directory", json={"path": path})
        if reply.status_code == 400:
            raise FileNotFoundError(path)
        tree = self._ok(reply, "/list_directory").json().get("directory_tree", {})
        if "error" in tree:
            raise FileNotFoundError(f"{path}: {tree['error']}")
        return sorted(str(child["name"]) for child in tree.get("children", []))
