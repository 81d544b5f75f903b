"""The PATH shims: a suite's command name runs the real program with the desktop's settings, the
caller's conflicting arguments dropped; a missing program's shim names its install command."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mcpworld.apps.catalog import programs
from mcpworld.apps.programs import Program, desktop_values, program_for, write_shims


def run(bin_dir: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=10)


def test_a_shim_puts_the_desktops_arguments_first_and_drops_the_callers_conflicting_ones(tmp_path):
    echo = Program(
        app="echoer",
        binary="echo",
        names=("google-chrome", "chrome"),
        args=("--remote-debugging-port={port_cdp}", "--user-data-dir={home}/.config/google-chrome"),
        drop=("--remote-debugging-port=", "--user-data-dir="),
        ports=("cdp",),
    )
    values = desktop_values([echo], tmp_path / "home")
    write_shims([echo], tmp_path / "bin", values)
    out = run(tmp_path / "bin", "google-chrome", "--remote-debugging-port=1337", "--user-data-dir=/x", "a b", "--new-window")
    assert out.stdout.split() == [
        f"--remote-debugging-port={values['port_cdp']}",
        f"--user-data-dir={tmp_path}/home/.config/google-chrome",
        "a",
        "b",
        "--new-window",
    ]
    assert run(tmp_path / "bin", "chrome", "x").stdout.startswith("--remote-debugging-port=")


def test_a_shim_sets_the_programs_environment(tmp_path):
    env = Program(app="envy", binary="env", names=("envy",), env={"MOZ_LEGACY_PROFILES": "1", "WHERE": "{home}"})
    write_shims([env], tmp_path / "bin", desktop_values([env], tmp_path / "h"))
    out = run(tmp_path / "bin", "envy").stdout.splitlines()
    assert "MOZ_LEGACY_PROFILES=1" in out and f"WHERE={tmp_path}/h" in out


def test_each_desktop_gets_its_own_ports_and_password(tmp_path):
    program = Program(app="p", binary="true", names=("p",), ports=("cdp", "vlc"))
    a, b = desktop_values([program], tmp_path), desktop_values([program], tmp_path)
    assert a["port_cdp"] != a["port_vlc"] and a["password"] != b["password"] and len(a["password"]) == 16


def test_a_missing_programs_shim_exits_127_with_the_install_command(tmp_path):
    ghost = Program(app="ghost", binary="ghost-not-installed", names=("ghost",), install="apt-get install -y ghost")
    write_shims([ghost], tmp_path / "bin", desktop_values([ghost], tmp_path))
    out = run(tmp_path / "bin", "ghost")
    assert out.returncode == 127 and "ghost: ghost needs 'ghost-not-installed'" in out.stderr
    assert "apt-get install -y ghost" in out.stderr


def test_the_app_configs_name_every_suite_command_once():
    found = programs()
    names = [n for p in found for n in p.names]
    assert len(names) == len(set(names))
    for command, app in [
        ("google-chrome", "chromium"),
        ("chrome", "chromium"),
        ("libreoffice", "libreoffice_calc"),
        ("soffice", "libreoffice_calc"),
        ("lowriter", "libreoffice_writer"),
        ("vlc", "vlc"),
        ("gimp", "gimp"),
        ("thunderbird", "thunderbird"),
        ("/usr/bin/vlc", "vlc"),
    ]:
        assert program_for(list(found), command).app == app
    assert all(p.install.startswith("apt-get install -y ") or p.install == f"make apps APPS={p.app}" for p in found)
    assert program_for(list(found), "code").app == "vscode"
    assert all(p.profile is None or p.profile.is_dir() for p in found)


def test_osworlds_devtools_forwarder_is_recognised_and_nothing_else():
    from mcpworld.apps.programs import is_port_forwarder

    assert is_port_forwarder(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
    assert is_port_forwarder(["/usr/bin/socat", "TCP-LISTEN:9222,fork", "TCP:127.0.0.1:1337"])
    assert not is_port_forwarder(["socat", "-", "UNIX-CONNECT:/tmp/x"])
    assert not is_port_forwarder(["google-chrome", "tcp-listen:9222"])


def test_a_folder_closed_to_other_accounts_is_not_on_the_desktops_path(tmp_path, monkeypatch):
    from mcpworld.env.local.processes import reachable_by_all, scrubbed_env

    closed = tmp_path / "closed" / "bin"
    closed.mkdir(parents=True)
    (tmp_path / "closed").chmod(0o700)
    tmp_path.chmod(0o755)
    assert reachable_by_all("/usr/bin") and not reachable_by_all(str(closed)) and not reachable_by_all("relative")
    monkeypatch.setenv("PATH", f"{closed}:/usr/bin:/bin")
    assert scrubbed_env(tmp_path, tmp_path)["PATH"] == "/usr/bin:/bin"


def test_a_path_folder_this_account_cannot_look_into_is_left_out(tmp_path, monkeypatch):
    """After `su` without `-`, PATH may name root's folders, which is_dir() cannot even stat."""
    from mcpworld.env.local import processes

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(processes.Path, "is_dir", refused)
    assert processes.reachable_by_all("/root/.cargo/bin") is False
