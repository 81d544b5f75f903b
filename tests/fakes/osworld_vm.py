"""A stand-in for the server inside OSWorld's Ubuntu VM (``desktop_env/server/main.py``), written
here, speaking its HTTP API (routes, form/JSON bodies, reply shapes and status codes as recorded from
the real server: tests/data/vm/osworld_server_replies.json), over a real local desktop: an Xvfb
display with openbox and a D-Bus session, started by this process.

The "VM's" home is a folder of the test's; OSWorld's ``/home/user`` in paths and commands means it,
as on the VM. ``python``/``python3`` is the VM's own Python with PyAutoGUI: a venv of its own
(``vm_python()``, PyAutoGUI 0.9.54 as OSWorld pins it), never the harness's (PyAutoGUI's python3-xlib
would overwrite the harness's python-xlib). With ``--dialect waa`` the health route is /probe, as
Windows Agent Arena's server has it, and WAA's ``C:\\Users\\Docker`` is the same home.

    python tests/fakes/osworld_vm.py --port P --home DIR --display :N [--width W --height H] [--dialect waa]

It runs any command it is sent, on this machine, so it binds 127.0.0.1 and refuses what a web page in
a browser sends (a foreign Host or Origin: ``mcpworld.core.listener.browser_refusal``). It takes no
token: OSWorld's server takes none, and ``env=vm`` talks to the real one (docs/security.md).

What env=vm relies on behaves as on the real server (checked against OSWorld's own ``main.py``, run
on Xvfb, 2026-11-28; tests/data/vm/README.md):

- ``GET /terminal``: the accessibility text of the focused terminal of GNOME Terminal's active
  window, right-stripped (``{"output": …, "status": "success"}``; ``output`` null when no GNOME
  Terminal window is active; 500 ``{"status": "error", "message"}`` when AT-SPI fails). Read here, as
  there, through pyatspi (Debian's ``/usr/bin/python3``) on the desktop's AT-SPI bus. As on the Ubuntu
  VM, ctrl+alt+t opens GNOME Terminal (an openbox key binding here, GNOME's there); its server is
  started with the desktop, so the first window opens in time for a task's short wait.
- ``/execute``: ``python``/``python3`` is the VM's Python with PyAutoGUI 0.9.54 and python3-xlib 0.15,
  whose ``pyautogui.write`` drops every character outside printable ASCII, as on the VM (env=vm's
  typing path: mcpworld/env/vm/actions.py).
- ``POST /window_size`` (form ``app_class_name``): the first window of ``_NET_CLIENT_LIST`` whose
  WM class names it, else a 500 (the real view returns None); ``POST /wallpaper``: the file GNOME's
  ``picture-uri`` names, 404 when gsettings gives none, 500 when the file cannot be sent.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import mss
from flask import Flask, Response, jsonify, request, send_file
from PIL import Image

from mcpworld.core.listener import browser_refusal

VM_HOME = "/home/user"
# --dialect waa: the Windows account's home and folders, and Windows programs with a stand-in here
WINDOWS_HOME = re.compile(r"[A-Za-z]:[\\/]Users[\\/]Docker((?:[\\/][^\\/\s'\"<>|]+)*)")
WINDOWS_FOLDERS = ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos")
WINDOWS_PROGRAMS = {"explorer": "pcmanfm", "explorer.exe": "pcmanfm"}


PYAUTOGUI = "pyautogui==0.9.54"  # OSWorld's VM server pin
PYTHON_XLIB = "python3-xlib==0.15"  # and its Xlib (the VM's pyautogui and env=vm's typing use it)
SYSTEM_PYTHON = "/usr/bin/python3"  # the distribution's, with python3-pyatspi (the VM's server has pyatspi)

# OSWorld's /terminal: the text of the focused terminal in GNOME Terminal's active window, or None
TERMINAL_SCRIPT = """
import json, pyatspi
def find(node, depth=0):
    found = []
    if depth > 50:
        return found
    for child in node:
        if child is None:
            continue
        state = child.getState()
        if child.getRoleName() == 'terminal' and state.contains(pyatspi.STATE_FOCUSED):
            found.append(child)
        found += find(child, depth + 1)
    return found
output = None
for app in pyatspi.Registry.getDesktop(0):
    if app is None or app.getRoleName() != 'application' or app.name != 'gnome-terminal-server':
        continue
    for frame in app:
        if frame.getRoleName() == 'frame' and frame.getState().contains(pyatspi.STATE_ACTIVE):
            terminals = find(frame)
            if len(terminals) == 1:
                text = terminals[0].queryText()
                output = text.getText(0, text.characterCount).replace('\ufffc', '').replace('\ufffd', '').rstrip()
            break
print(json.dumps(output))
"""
# OSWorld's /window_size: the first client window whose WM class (either part) is the name
WINDOW_SIZE_SCRIPT = """
import json, sys
from Xlib import X, display, error
d = display.Display()
root = d.screen().root
ids = root.get_full_property(d.intern_atom('_NET_CLIENT_LIST'), X.AnyPropertyType)
size = None
for window_id in (ids.value if ids else []):
    try:
        window = d.create_resource_object('window', window_id)
        wm_class = window.get_wm_class()
        if wm_class and sys.argv[1].lower() in [name.lower() for name in wm_class]:
            geometry = window.get_geometry()
            size = {'width': geometry.width, 'height': geometry.height}
            break
    except error.XError:
        continue
print(json.dumps(size))
"""


def vm_python() -> str:
    """The VM's interpreter: a venv with PyAutoGUI, made once per machine (a lock keeps parallel
    tests from making it twice)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpworld" / "osworld-vm-python"
    python = cache / "bin" / "python"
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.parent / "osworld-vm-python.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cache / ".ready").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(cache)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", PYAUTOGUI, PYTHON_XLIB], check=True)
            (cache / ".ready").touch()
    return str(python)


def make_app(home: Path, env: dict[str, str], dialect: str, python: str = sys.executable) -> Flask:
    app = Flask(__name__)

    @app.before_request
    def same_origin_only() -> Response | None:
        bound = (request.environ["SERVER_NAME"], int(request.environ["SERVER_PORT"]))
        refusal = browser_refusal(request.method, request.headers, bound)
        return None if refusal is None else Response(refusal.body(), refusal.status, headers=refusal.headers())

    def windows(text: str) -> str:
        """C:\\Users\\Docker\\X\\Y in a path or a command line → this VM's home/X/Y."""
        return WINDOWS_HOME.sub(lambda m: str(home) + m.group(1).replace("\\", "/"), text) if dialect == "waa" else text

    def local(path: str) -> str:
        path = windows(os.path.expandvars(path))
        if path == "~" or path.startswith("~/"):
            return str(home) + path[1:]
        return path.replace(VM_HOME, str(home)) if path.startswith(VM_HOME) else path

    def argv(command: list[str] | str, shell: bool) -> list[str] | str:
        if shell:
            return windows(str(command)).replace(VM_HOME, str(home))
        parts = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        if parts and parts[0] in ("python", "python3"):
            parts[0] = python
        if parts and dialect == "waa":
            parts[0] = WINDOWS_PROGRAMS.get(parts[0].lower(), parts[0])
        return [local(p) if p.startswith(("~/", VM_HOME)) else windows(p).replace(VM_HOME, str(home)) for p in parts]

    @app.route("/setup/execute", methods=["POST"])
    @app.route("/execute", methods=["POST"])
    def execute():
        data = request.json or {}
        shell = data.get("shell", False)
        try:
            result = subprocess.run(
                argv(data.get("command", "" if shell else []), shell),
                shell=shell,
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
                cwd=home,
            )
        except Exception as exc:  # the real server answers any failure to run so
            return jsonify({"status": "error", "message": str(exc)}), 500
        return jsonify({"status": "success", "output": result.stdout, "error": result.stderr, "returncode": result.returncode})

    @app.route("/setup/launch", methods=["POST"])
    def launch():
        data = request.json or {}
        shell = data.get("shell", False)
        command = argv(data.get("command", "" if shell else []), shell)
        try:
            subprocess.Popen(
                command,
                shell=shell,
                env=env,
                cwd=home,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except Exception as exc:
            return jsonify({"status": "error", "message": str(exc)}), 500
        return f"{command if shell else ' '.join(command)} launched successfully"

    @app.route("/screenshot", methods=["GET"])
    def screenshot():
        with mss.MSS(display=env["DISPLAY"]) as grabber:
            shot = grabber.grab(grabber.monitors[0])
        buf = io.BytesIO()
        Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1).save(buf, "PNG")
        buf.seek(0)
        return send_file(buf, mimetype="image/png")

    @app.route("/screen_size", methods=["POST"])
    def screen_size():
        with mss.MSS(display=env["DISPLAY"]) as grabber:
            monitor = grabber.monitors[0]
        return jsonify({"width": monitor["width"], "height": monitor["height"]})

    @app.route("/terminal", methods=["GET"])
    def terminal():
        if dialect == "waa":  # the real server reads a terminal on Linux only
            return "Currently not implemented for platform Windows.", 500
        try:
            done = subprocess.run(
                [SYSTEM_PYTHON, "-c", TERMINAL_SCRIPT], capture_output=True, text=True, timeout=60, env=env, cwd=home
            )
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip()[-500:] or f"exit {done.returncode}")
            return jsonify({"output": json.loads(done.stdout), "status": "success"})
        except Exception as exc:
            return jsonify({"status": "error", "message": str(exc)}), 500

    @app.route("/window_size", methods=["POST"])
    def window_size():
        if "app_class_name" not in request.form:
            return jsonify({"error": "app_class_name is required"}), 400
        done = subprocess.run(
            [python, "-c", WINDOW_SIZE_SCRIPT, request.form["app_class_name"]],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=home,
        )
        found = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
        if not found or found[0] == "null":  # the real view returns None: Flask answers 500
            return "Internal Server Error", 500
        return jsonify(json.loads(found[0]))

    @app.route("/wallpaper", methods=["POST"])
    def wallpaper():
        done = subprocess.run(
            ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"], capture_output=True, text=True, env=env, cwd=home
        )
        path = done.stdout.strip().replace("file://", "").replace("'", "") if done.returncode == 0 else ""
        if not path:
            return "Wallpaper file not found", 404
        try:
            return send_file(local(path), mimetype="image/png")
        except Exception:
            return "Unable to serve the wallpaper file", 500

    @app.route("/platform", methods=["GET"])
    def platform():
        return "Windows" if dialect == "waa" else "Linux"

    @app.route("/probe", methods=["GET"])
    def probe():
        if dialect != "waa":
            return "not found", 404
        return jsonify({"status": "Probe successful", "message": "Service is operational"})

    @app.route("/file", methods=["POST"])
    def file():
        if "file_path" not in request.form:
            return jsonify({"error": "file_path is required"}), 400
        try:
            return send_file(local(request.form["file_path"]), as_attachment=True)
        except FileNotFoundError:
            return jsonify({"error": "File not found"}), 404

    @app.route("/setup/upload", methods=["POST"])
    def upload():
        if "file_path" in request.form and "file_data" in request.files:
            request.files["file_data"].save(local(request.form["file_path"]))
            return "File Uploaded"
        return jsonify({"error": "file_path and file_data are required"}), 400

    @app.route("/list_directory", methods=["POST"])
    def list_directory():
        data = request.get_json()
        if "path" not in data:
            return jsonify(error="Missing 'path' parameter"), 400
        start = local(data["path"])
        if not os.path.isdir(start):
            return jsonify(error="The provided path is not a directory"), 400

        def tree(directory: str) -> dict:
            node: dict = {"type": "directory", "name": os.path.basename(directory), "children": []}
            for entry in os.listdir(directory):
                full = os.path.join(directory, entry)
                node["children"].append(tree(full) if os.path.isdir(full) else {"type": "file", "name": entry})
            return node

        return jsonify(directory_tree=tree(start))

    @app.route("/setup/open_file", methods=["POST"])
    def open_file():
        path = (request.json or {}).get("path")
        if not path:
            return "Path not supplied!", 400
        if not os.path.exists(local(path)):
            return f"File not found: {path}", 404
        subprocess.Popen(
            ["xdg-open", local(path)],
            env=env,
            cwd=home,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return "File opened successfully"

    def _window(verb: str):
        data = request.json or {}
        name = data.get("window_name")
        if not name:
            return "window_name required", 400
        # the real server runs wmctrl -a/-c (by title substring); xdotool does the same here
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--classname" if data.get("by_class") else "--name", name],
            capture_output=True,
            text=True,
            env=env,
        )
        for window in found.stdout.split()[:1]:
            action = "windowactivate" if verb == "activate" else "windowclose"
            subprocess.run(["xdotool", action, window], env=env, capture_output=True)
        return ("Window activated successfully" if verb == "activate" else "Window closed successfully."), 200

    @app.route("/setup/activate_window", methods=["POST"])
    def activate_window():
        return _window("activate")

    @app.route("/setup/close_window", methods=["POST"])
    def close_window():
        return _window("close")

    return app


TERMINAL_BIND = '<keybind key="C-A-t"><action name="Execute"><command>gnome-terminal</command></action></keybind>'


def openbox_rc(home: Path) -> Path:
    """The system's openbox configuration with GNOME's terminal key (ctrl+alt+t: GNOME Terminal)."""
    system = Path("/etc/xdg/openbox/rc.xml")
    text = system.read_text() if system.is_file() else ""
    if "<keyboard>" in text:
        text = text.replace("<keyboard>", "<keyboard>" + TERMINAL_BIND, 1)
    else:
        text = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<openbox_config xmlns="http://openbox.org/3.4/rc">'
            f"<keyboard>{TERMINAL_BIND}</keyboard></openbox_config>\n"
        )
    rc = home / ".config" / "openbox" / "vm-rc.xml"
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(text)
    return rc


def start_window_manager(home: Path, env: dict[str, str], tries: int = 5) -> subprocess.Popen:
    """openbox, running and managing the display (``wmctrl -m`` answers), as a VM's session brings its
    window manager back after a revert; one that exits at start (the display's last server still
    going away under a loaded test run) is started again."""
    log = home.parent / "openbox.log"  # (beside the VM's home, never in it)
    for _ in range(tries):
        with log.open("a") as out:
            wm = subprocess.Popen(["openbox", "--config-file", str(openbox_rc(home))], env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + 20
        while wm.poll() is None and time.monotonic() < deadline:
            if subprocess.run(["wmctrl", "-m"], env=env, capture_output=True).returncode == 0:
                return wm
            time.sleep(0.2)
        wm.kill()
        wm.wait()
    raise SystemExit(f"openbox did not start on {env['DISPLAY']}: {log.read_text()[-500:]}")


def start_desktop(display: str, width: int, height: int, home: Path) -> tuple[list[subprocess.Popen], dict[str, str]]:
    """Xvfb + openbox + a D-Bus session with its AT-SPI bus, the VM's desktop."""
    # -displayfd: Xvfb writes the display's number once it accepts clients (its socket file appears
    # before that, and a client that comes too early, openbox, fails to open the display)
    ready_read, ready_write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-displayfd", str(ready_write)],
        pass_fds=(ready_write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(ready_write)
    with os.fdopen(ready_read) as ready:
        readable, _, _ = select.select([ready], [], [], 20)
        if not readable or not ready.readline().strip():
            xvfb.kill()
            raise SystemExit(f"Xvfb {display} did not start")
    xauth = home / ".Xauthority"
    xauth.touch()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "DISPLAY": display,
        "XAUTHORITY": str(xauth),
        "LANG": "C.UTF-8",
    }
    bus = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    env["DBUS_SESSION_BUS_ADDRESS"] = bus[0]
    processes = [xvfb]
    launcher = Path("/usr/libexec/at-spi-bus-launcher")  # GNOME Terminal's text is read over AT-SPI
    if launcher.exists():
        processes.append(
            subprocess.Popen(
                [str(launcher), "--launch-immediately"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        )
    processes.append(start_window_manager(home, env))
    if shutil.which("gnome-terminal") and shutil.which("gdbus"):
        # GNOME Terminal's server started (no window), so ctrl+alt+t opens a terminal within the 0.5 s OSWorld's
        # task waits before typing, as on a VM of its own; a loaded test machine starts it later than that
        subprocess.run(
            [
                "gdbus",
                "call",
                "--session",
                "--dest",
                "org.gnome.Terminal",
                "--object-path",
                "/org/gnome/Terminal",
                "--method",
                "org.freedesktop.DBus.Peer.Ping",
            ],
            env=env,
            capture_output=True,
            timeout=60,
        )
    return processes, env | {"_DBUS_PID": bus[1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--display", required=True)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--dialect", default="osworld", choices=["osworld", "waa"])
    args = parser.parse_args()
    args.home.mkdir(parents=True, exist_ok=True)
    for folder in WINDOWS_FOLDERS if args.dialect == "waa" else ():
        (args.home / folder).mkdir(exist_ok=True)
    python = vm_python()
    processes, env = start_desktop(args.display, args.width, args.height, args.home)
    env["PATH"] = f"{Path(python).parent}:{env['PATH']}"  # `python` in a shell line is the VM's too
    dbus_pid = int(env.pop("_DBUS_PID"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a restart (the test's reset command) stops the desktop
    try:
        make_app(args.home, env, args.dialect, python).run(host="127.0.0.1", port=args.port, threaded=True)
    finally:
        # the desktop gone before this process is (a restart at once takes the same display number):
        # what it started, then what those started in its process group (the AT-SPI bus …)
        for proc in processes:
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(OSError):
            os.kill(dbus_pid, signal.SIGTERM)
        if os.getpgrp() == os.getpid():  # started as its own group (setsid): the rest of the group
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.killpg(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    main()
