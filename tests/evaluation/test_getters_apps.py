import copy
import json
import sqlite3
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from mcpworld.core.errors import InfraError, UserError
from mcpworld.env.base import ShellResult
from mcpworld.evaluation.getters.app_config import gimp_config_file, libreoffice_config, vlc_config
from mcpworld.evaluation.getters.base import canonical_home
from mcpworld.evaluation.getters.chrome_profile import bookmarks, chrome_font_size, chrome_preferences, history
from mcpworld.evaluation.getters.dates import format_date, relative_date, rule_relative_time
from mcpworld.evaluation.getters.desktop import vm_screen_size, vm_window_size
from mcpworld.evaluation.getters.generic import cache_file
from mcpworld.evaluation.metrics.appstate.chromium import check_history_deleted
from mcpworld.evaluation.metrics.appstate.vlc import is_vlc_recordings_folder
from mcpworld.evaluation.registry import GETTERS


def test_getters_are_registered():
    for name in (
        "cache_file",
        "rule_relativeTime",
        "vm_screen_size",
        "vm_window_size",
        "vlc_config",
        "gimp_config_file",
        "libreoffice_config",
        "chrome_preferences",
        "bookmarks",
        "history",
        "chrome_font_size",
    ):
        assert name in GETTERS


# --- cache_file ---------------------------------------------------------------------------------


def test_cache_file_relative_absolute_and_missing(env, tmp_path):
    env.cache_dir.mkdir(parents=True)
    (env.cache_dir / "accounts.csv").write_text("a,b\n")
    assert cache_file(env, {"type": "cache_file", "path": "accounts.csv"}) == str((env.cache_dir / "accounts.csv").resolve())
    shipped = tmp_path / "task" / "gold.txt"
    shipped.parent.mkdir()
    shipped.write_text("gold")
    assert cache_file(env, {"type": "cache_file", "path": str(shipped)}) == str(shipped)
    assert cache_file(env, {"type": "cache_file", "path": "nope.csv"}) is None  # anchor: AssertionError
    with pytest.raises(UserError, match="outside the cache"):
        cache_file(env, {"type": "cache_file", "path": "../home/x"})
    with pytest.raises(UserError, match="'path'"):
        cache_file(env, {"type": "cache_file"})


# --- screen and window -----------------------------------------------------------------------------


def test_vm_screen_size(env):
    assert vm_screen_size(env, {"type": "vm_screen_size"}) == {"width": 1000, "height": 1000}


class _FakeShell:
    def __init__(self, env, result):
        self.env, self.result, self.commands = env, result, []

    def __call__(self, command, timeout=30.0, max_output=20_000):
        self.commands.append(command)
        return self.result


XDOTOOL_OUTPUT = """WINDOW=111
X=0
Y=0
WIDTH=10
HEIGHT=10
SCREEN=0
WINDOW=222
X=5
Y=6
WIDTH=1920
HEIGHT=1080
SCREEN=0
"""


def test_vm_window_size_takes_the_largest_window(env, monkeypatch):
    fake = _FakeShell(env, ShellResult(0, XDOTOOL_OUTPUT, ""))
    monkeypatch.setattr(env, "shell", fake)
    assert vm_window_size(env, {"type": "vm_window_size", "app_class_name": "vlc; rm -rf /"}) == {"width": 1920, "height": 1080}
    assert "'vlc; rm -rf /'" in fake.commands[0]  # quoted


def test_vm_window_size_not_found_and_no_xdotool(env, monkeypatch):
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(1, "", "")))
    assert vm_window_size(env, {"type": "vm_window_size", "app_class_name": "vlc"}) is None
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(127, "", "bash: xdotool: command not found")))
    with pytest.raises(InfraError, match="xdotool"):
        vm_window_size(env, {"type": "vm_window_size", "app_class_name": "vlc"})
    with pytest.raises(UserError, match="app_class_name"):
        vm_window_size(env, {"type": "vm_window_size"})


# --- rule_relativeTime ----------------------------------------------------------------------------

WED = date(2024, 1, 31)  # a Wednesday


@pytest.mark.parametrize(
    "phrase, expected",
    [
        ("today", WED),
        ("tomorrow", date(2024, 2, 1)),
        ("Yesterday", date(2024, 1, 30)),
        ("day after tomorrow", date(2024, 2, 2)),
        ("next Monday", date(2024, 2, 5)),
        ("next wednesday", date(2024, 2, 7)),  # strictly after today
        ("this Wednesday", WED),
        ("this Sunday", date(2024, 2, 4)),
        ("last Friday", date(2024, 1, 26)),
        ("5th next month", date(2024, 2, 5)),
        ("10th of next month", date(2024, 2, 10)),
        ("31st next month", date(2024, 2, 29)),  # clamped to the month's end
        ("this month", WED),
        ("next month", date(2024, 2, 29)),
        ("in 3 days", date(2024, 2, 3)),
        ("two weeks later", date(2024, 2, 14)),
        ("a week ago", date(2024, 1, 24)),
        ("first monday four months later", date(2024, 5, 6)),
        ("first monday eight months later", date(2024, 9, 2)),
        ("last friday of next month", date(2024, 2, 23)),
        ("second tuesday of this month", date(2024, 1, 9)),
    ],
)
def test_relative_date(phrase, expected):
    assert relative_date(phrase, WED) == expected


def test_relative_date_across_year_end():
    assert relative_date("5th next month", date(2023, 12, 20)) == date(2024, 1, 5)
    assert relative_date("first monday four months later", date(2023, 11, 2)) == date(2024, 3, 4)


def test_relative_date_unknown_phrase():
    with pytest.raises(UserError, match="fortnight-ish"):
        relative_date("fortnight-ish", WED)


def test_format_date_placeholders():
    day = date(2024, 3, 5)
    text = format_date("{DoW}, {Month} {DayD}, {Year} | {MonthFull} {Day0D}/{Month0D} {MonthD} {DoWFull} {Other} {Year}", day)
    assert text == "Tue, Mar 5, 2024 | March 05/03 3 Tuesday {Other} 2024"


def test_rule_relative_time_fills_templates_without_mutating(env):
    cfg = {
        "type": "rule_relativeTime",
        "rules": {
            "relativeTime": {"from": "tomorrow", "to": "next Monday"},
            "expected": {"from": "{DoW}, {Month} {DayD}, {Year}", "to": ["{Year}-{Month0D}", "x"]},
            "timezone": "Pacific/Kiritimati",
        },
    }
    before = copy.deepcopy(cfg)
    out = rule_relative_time(env, cfg)
    assert cfg == before  # the anchor mutated the caller's config
    today = datetime.now(ZoneInfo("Pacific/Kiritimati")).date()
    assert out["expected"]["from"] == format_date("{DoW}, {Month} {DayD}, {Year}", relative_date("tomorrow", today))
    assert out["expected"]["to"] == [format_date("{Year}-{Month0D}", relative_date("next monday", today)), "x"]
    assert out["relativeTime"] == cfg["rules"]["relativeTime"]


def test_rule_relative_time_single_from_fills_time_and_uses_env_clock(env):
    out = rule_relative_time(
        env, {"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "today"}, "expected": {"time": "{Year}"}}}
    )
    assert out["expected"]["time"] == str(datetime.now().astimezone().year)
    assert any(cmd.startswith("date ") for cmd in env.shell_calls)


def test_rule_relative_time_config_errors(env):
    with pytest.raises(UserError, match="timezone"):
        rule_relative_time(
            env, {"rules": {"relativeTime": {"from": "today"}, "expected": {"time": "x"}, "timezone": "Mars/Base"}}
        )
    with pytest.raises(UserError, match="relativeTime"):
        rule_relative_time(env, {"rules": {"expected": {"time": "x"}}})
    with pytest.raises(UserError, match=r"relativeTime\.to"):
        rule_relative_time(env, {"rules": {"relativeTime": {"from": "today", "to": "tomorrow"}, "expected": {"from": "x"}}})


# --- config files ----------------------------------------------------------------------------------


def test_canonical_home_rewrites_only_whole_components(env):
    home = str(env.home)
    data = f"a={home}/Videos\nb={home}2/x\nc={home}\n".encode()
    assert canonical_home(env, data).decode() == f"a=/home/user/Videos\nb={home}2/x\nc=/home/user\n"


def test_vlc_config_copies_with_task_home_paths(env):
    env.write("~/.config/vlc/vlcrc", f"[core]\ninput-record-path={env.home}/Desktop/rec\n")
    local = vlc_config(env, {"type": "vlc_config", "dest": "vlcrc"})
    assert Path(local).read_text() == "[core]\ninput-record-path=/home/user/Desktop/rec\n"
    assert is_vlc_recordings_folder(local, {"recording_file_path": "/home/user/Desktop/rec"}) == 1.0
    raw = vlc_config(env, {"type": "vlc_config", "dest": "raw", "canonical_home": False})
    assert str(env.home) in Path(raw).read_text()


def test_vlc_config_missing_drops_stale_copy(env):
    env.write("~/.config/vlc/vlcrc", "x=1\n")
    assert vlc_config(env, {"type": "vlc_config"}) is not None
    env.resolve("~/.config/vlc/vlcrc").unlink()
    assert vlc_config(env, {"type": "vlc_config"}) is None
    assert not (env.cache_dir / "vlcrc").exists()


def test_gimp_config_file_versions(env):
    assert gimp_config_file(env, {"type": "gimp_config_file"}) is None
    env.write("~/.config/GIMP/3.0/gimprc", '(theme "Dark")\n')
    assert Path(gimp_config_file(env, {"type": "gimp_config_file"})).read_text() == '(theme "Dark")\n'
    env.write("~/.config/GIMP/2.10/gimprc", '(theme "Light")\n')
    light = gimp_config_file(env, {"type": "gimp_config_file", "file_name": "gimprc", "dest": "g"})
    assert Path(light).read_text() == '(theme "Light")\n'
    env.write("~/.config/GIMP/2.10/sessionrc", "(session)\n")
    assert Path(gimp_config_file(env, {"type": "gimp_config_file", "file_name": "sessionrc"})).name == "sessionrc"
    with pytest.raises(UserError, match="outside the cache"):
        gimp_config_file(env, {"type": "gimp_config_file", "dest": "../../x"})


def test_libreoffice_config(env):
    assert libreoffice_config(env, {"type": "libreoffice_config"}) is None
    env.write("~/.config/libreoffice/4/user/registrymodifications.xcu", "<oor:items/>")
    assert Path(libreoffice_config(env, {"type": "libreoffice_config"})).name == "registrymodifications.xcu"


def _write_profile(env, folder="~/.config/chromium/Default"):
    env.write(
        f"{folder}/Preferences",
        json.dumps(
            {
                "webkit": {"webprefs": {"default_font_size": 20}},
                "download": {"default_directory": f"{env.home}/Downloads"},
            }
        ),
    )
    env.write(f"{folder}/Bookmarks", json.dumps({"roots": {"bookmark_bar": {"children": []}}, "version": 1}))
    db = env.resolve(f"{folder}/History")
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT)")
        conn.execute("INSERT INTO urls (url, title) VALUES ('https://news.example.com/', 'News')")
    conn.close()


def test_chromium_profile_getters(env):
    for getter in (chrome_preferences, bookmarks, history, chrome_font_size):
        assert getter(env, {"type": "x"}) is None
    _write_profile(env)
    prefs = chrome_preferences(env, {"type": "chrome_preferences"})
    assert prefs["download"]["default_directory"] == "/home/user/Downloads"
    assert chrome_preferences(env, {"type": "chrome_preferences", "key": ["webkit", "webprefs", "default_font_size"]}) == 20
    assert chrome_preferences(env, {"type": "chrome_preferences", "key": ["nope"], "default": "Google"}) == "Google"
    assert bookmarks(env, {"type": "bookmarks"}) == {"bookmark_bar": {"children": []}}
    assert chrome_font_size(env, {"type": "chrome_font_size"}) == {
        "default_font_size": 20,
        "default_fixed_font_size": 13,
        "minimum_font_size": 0,
    }
    local = history(env, {"type": "history", "dest": "history.sqlite"})
    assert Path(local).name == "history.sqlite"
    assert check_history_deleted(local, {"type": "keywords", "keywords": ["news"]}) == 0.0


def test_chromium_profile_dir_and_fallback(env):
    _write_profile(env, "~/.config/google-chrome/Default")
    assert chrome_font_size(env, {"type": "chrome_font_size"})["default_font_size"] == 20  # found by fallback
    assert chrome_font_size(env, {"type": "chrome_font_size", "profile_dir": "~/.config/chromium/Default"}) is None
    assert chrome_font_size(env, {"type": "chrome_font_size", "profile_dir": "~/.config/google-chrome/Default"}) is not None


def test_corrupt_preferences_fail_the_getter(env):
    env.write("~/.config/chromium/Default/Preferences", "{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        chrome_preferences(env, {"type": "chrome_preferences"})


# --- desktop settings: default video player, wallpaper --------------------------------------------

import os  # noqa: E402

from mcpworld.evaluation.getters.app_config import vscode_config  # noqa: E402
from mcpworld.evaluation.getters.desktop import default_video_player, terminal_text, vm_terminal_output, vm_wallpaper  # noqa: E402


def _fake_command(tmp_path, monkeypatch, name: str, script: str) -> None:
    """Put an executable ``name`` running ``script`` first on PATH (the DirEnvironment's shell inherits it)."""
    folder = tmp_path / "fakebin"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/bash\n" + script)
    (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


def test_default_video_player_is_the_most_common_default(env, tmp_path, monkeypatch):
    # mp4 and matroska (and the rest) open in VLC, webm in mpv, flv has no default
    _fake_command(
        tmp_path,
        monkeypatch,
        "xdg-mime",
        'case "$3" in video/webm) echo mpv.desktop;; video/x-flv) ;; *) echo vlc.desktop;; esac\n',
    )
    assert default_video_player(env, {"type": "default_video_player"}) == "vlc.desktop"
    _fake_command(tmp_path, monkeypatch, "xdg-mime", 'case "$3" in video/webm) echo mpv.desktop;; esac\n')
    assert default_video_player(env, {"type": "default_video_player"}) == "mpv.desktop"
    _fake_command(tmp_path, monkeypatch, "xdg-mime", "exit 0\n")
    assert default_video_player(env, {"type": "default_video_player"}) == "unknown"


def test_default_video_player_needs_xdg_mime(env, monkeypatch):
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(127, "", "bash: xdg-mime: command not found")))
    with pytest.raises(InfraError, match="xdg-mime"):
        default_video_player(env, {"type": "default_video_player"})


def test_vm_wallpaper_reads_the_setting_written_last(env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(env.home))
    gnome = env.write("Pictures/space image.png", "gnome wallpaper")
    pcmanfm = env.write("Pictures/pcman.jpg", "pcmanfm wallpaper")
    # gsettings prints the URI quoted and percent-encoded
    _fake_command(tmp_path, monkeypatch, "gsettings", f"echo \"'file://{str(gnome).replace(' ', '%20')}'\"\n")
    conf = env.write(".config/pcmanfm/default/desktop-items-0.conf", f"[*]\nwallpaper_mode=stretch\nwallpaper={pcmanfm}\n")
    dconf = env.write(".config/dconf/user", "binary gvdb")
    os.utime(conf, (1_000, 1_000))
    local = vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "background.png"})
    assert Path(local).name == "background.png" and Path(local).read_text() == "gnome wallpaper"
    os.utime(dconf, (500, 500))
    assert Path(vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "b.png"})).read_text() == "pcmanfm wallpaper"


def test_vm_wallpaper_default_and_none(env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(env.home))
    default = env.write("usr/share/backgrounds/default.webp", "the default")
    _fake_command(tmp_path, monkeypatch, "gsettings", f"echo \"'file://{default}'\"\n")
    # nothing set: GSettings' default wallpaper, as OSWorld would get it
    assert Path(vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "w.png"})).read_text() == "the default"
    default.unlink()
    assert vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "w.png"}) is None
    _fake_command(tmp_path, monkeypatch, "gsettings", "echo 'No such schema' >&2; exit 1\n")
    assert vm_wallpaper(env, {"type": "vm_wallpaper", "dest": "w.png"}) is None


# --- terminal output ------------------------------------------------------------------------------


def test_terminal_text_replays_line_editing():
    # bracketed-paste toggles, a title (OSC), colours, a typo fixed with backspace, a readline
    # history recall redrawn with cursor moves and erase-to-end, a progress line rewritten with \r
    raw = (
        "\x1b]0;user@host: ~\x07\x1b[?2004h\x1b[01;32muser\x1b[00m$ ls -l\x08\x08\x08\x08\x08wc -l *.php\r\n"
        "\x1b[?2004l\r  54 total\r\n"
        "$ stty sizr\x08e\r\n43 132\r\n"
        "$ echo one two\x1b[3D\x1b[Kthree\r\none three\r\n"
        "10%\r100%\r\n$ "
    )
    assert terminal_text(raw) == "user$ wc -l *.php\n  54 total\n$ stty size\n43 132\n$ echo one three\none three\n100%\n$"


def test_vm_terminal_output(env):
    assert vm_terminal_output(env, {"type": "vm_terminal_output"}) is None  # no terminal ran
    log_path = env.resolve("~/.cache/mcpworld/terminal.log")
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(b"\x1b[?2004hbash-5.2$ stty size\r\n\x1b[?2004l\r43 132\r\n\x1b[?2004hbash-5.2$ ")
    assert vm_terminal_output(env, {"type": "vm_terminal_output"}) == "bash-5.2$ stty size\n43 132\nbash-5.2$"


# --- VS Code --------------------------------------------------------------------------------------


class _PaletteEnv:
    """Stands in for a desktop whose VS Code runs an evaluation extension's command from the palette."""

    def __init__(self, env, writes: str | None):
        self.env, self.writes, self.actions = env, writes, []

    def __call__(self, action):
        self.actions.append(action)
        if action == {"kind": "key", "keys": "Return"} and self.writes is not None:
            self.env.write("OpenProject.txt", self.writes)


def test_vscode_config_runs_the_palette_command_and_copies_its_file(env, monkeypatch):
    palette = _PaletteEnv(env, "project")
    monkeypatch.setattr(env, "act", palette, raising=False)
    cfg = {
        "type": "vscode_config",
        "vscode_extension_command": "OpenProject",
        "path": "/home/user/OpenProject.txt",
        "dest": "OpenProject.txt",
    }
    local = vscode_config(env, cfg)
    assert Path(local).read_text() == "project"
    assert palette.actions == [
        {"kind": "key", "keys": "ctrl+shift+p"},
        {"kind": "type", "text": "OpenProject"},
        {"kind": "key", "keys": "Return"},
    ]


def test_vscode_config_extension_missing(env, monkeypatch):
    monkeypatch.setattr(env, "act", _PaletteEnv(env, None), raising=False)
    cfg = {"type": "vscode_config", "vscode_extension_command": "OpenProject", "path": "~/OpenProject.txt", "timeout": 0.3}
    assert vscode_config(env, cfg) is None
    with pytest.raises(UserError, match="vscode_extension_command"):
        vscode_config(env, {"type": "vscode_config", "path": "~/x"})


def test_desktop_getters_are_registered():
    for name in ("default_video_player", "vm_wallpaper", "vm_terminal_output", "vscode_config"):
        assert name in GETTERS


def test_vm_clipboard_needs_a_display_and_a_known_selection(env, monkeypatch):
    from mcpworld.evaluation.getters.desktop import vm_clipboard

    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(InfraError, match="X display"):
        vm_clipboard(env, {"type": "vm_clipboard"})
    with pytest.raises(UserError, match="selection"):
        vm_clipboard(env, {"type": "vm_clipboard", "selection": "clipboard2"})
    assert "vm_clipboard" in GETTERS


# --- Windows Agent Arena's file getters -----------------------------------------------------------

from mcpworld.evaluation.getters import desktop, waa  # noqa: E402


def test_waa_path():
    assert waa.waa_path(r"C:\Users\Docker\Documents\secret.txt", "g") == "/home/user/Documents/secret.txt"
    assert waa.waa_path("C:/Users/Docker/Pictures", "g") == "/home/user/Pictures"
    assert waa.waa_path("~/Pictures", "g") == "~/Pictures"
    with pytest.raises(UserError, match="Windows path"):
        waa.waa_path(r"C:\Program Files\x", "g")


def test_waa_file_presence_getters(env):
    env.write("Documents/draft.txt", "This is a draft.")
    env.write("Documents/empty.txt", "")
    env.write("Desktop/example.txt", "x")
    env.resolve("Documents/MyFolder").mkdir()
    cfg = {"folder_name": r"C:\Users\Docker\Documents"}
    assert waa.vm_file_exists_in_vm_folder(env, {**cfg, "file_name": "draft.txt"}) == 1.0
    assert waa.vm_file_exists_in_vm_folder(env, {**cfg, "file_name": "empty.txt"}) == 0.0
    assert waa.vm_file_exists_in_vm_folder(env, {**cfg, "file_name": "missing.txt"}) == 0.0
    assert waa.vm_folder_exists_in_documents(env, {"folder_name": "MyFolder"}) is True
    assert waa.vm_folder_exists_in_documents(env, {"folder_name": "draft.txt"}) is False
    assert waa.vm_file_exists_in_desktop(env, {"file_name": "example.txt"}) is True
    assert waa.vm_file_exists_in_desktop(env, {"file_name": "Projects - Shortcut.lnk"}) is False
    assert waa.is_file_desktop(env, {"filename": "example.txt"}) == "true"
    assert waa.is_file_desktop(env, {"filename": "gone.txt"}) == "false"
    with pytest.raises(UserError, match="file_name"):
        waa.vm_file_exists_in_vm_folder(env, cfg)


def test_is_file_saved_desktop(env):
    env.write("Desktop/numdays.txt", "230 days\r\n")
    assert waa.is_file_saved_desktop(env, {"filename": "numdays.txt", "textcontent": "230 days"}) == "true"
    assert waa.is_file_saved_desktop(env, {"filename": "numdays.txt", "textcontent": "230 days", "exact": True}) == "true"
    assert waa.is_file_saved_desktop(env, {"filename": "numdays.txt", "textcontent": "230", "exact": True}) == "false"
    assert waa.is_file_saved_desktop(env, {"filename": "numdays.txt", "textcontent": "585 days"}) == "false"
    assert waa.is_file_saved_desktop(env, {"filename": "report.txt", "textcontent": "x"}) == "false"


def test_is_file_hidden(env):
    cfg = {"file_path": r"C:\Users\Docker\Documents\secret.txt"}
    env.write("Documents/secret.txt", "s")
    assert waa.is_file_hidden(env, cfg) == "false"
    env.write("Documents/.hidden", "other.txt\nsecret.txt\n")
    assert waa.is_file_hidden(env, cfg) == "true"
    env.resolve("Documents/.hidden").unlink()
    env.resolve("Documents/secret.txt").rename(env.resolve("Documents/.secret.txt"))
    assert waa.is_file_hidden(env, cfg) == "true"
    env.resolve("Documents/.secret.txt").unlink()
    assert waa.is_file_hidden(env, cfg) == "false"


def test_all_png_file_names(env):
    for name in ("cs-black-000.png", "cs-gray-7f7f7f.PNG", "notes.jpg"):
        env.write(f"Pictures/{name}", "x")
    cfg = {"folder_path": "C:/Users/Docker/Pictures", "file_path": "C:/Users/Docker/Pictures/png_files.txt"}
    assert waa.all_png_file_names(env, cfg) == "false"  # no list written
    env.write("Pictures/png_files.txt", "cs-gray-7f7f7f.PNG\ncs-black-000.png\n")
    assert waa.all_png_file_names(env, cfg) == "true"
    env.write("Pictures/png_files.txt", "cs-black-000.png\n")
    assert waa.all_png_file_names(env, cfg) == "false"


def test_is_all_docx_in_archive(env):
    cfg = {"folder_path": "C:/Users/Docker/Documents"}
    env.write("Documents/Doc01.docx", "x")
    env.write("Documents/notes.txt", "x")
    assert waa.is_all_docx_in_archive(env, cfg) == "false"  # no Archive yet
    env.resolve("Documents/Archive").mkdir()
    assert waa.is_all_docx_in_archive(env, cfg) == "false"  # an empty Archive
    env.resolve("Documents/Doc01.docx").rename(env.resolve("Documents/Archive/Doc01.docx"))
    assert waa.is_all_docx_in_archive(env, cfg) == "true"
    env.write("Documents/Doc02.DOCX", "x")
    assert waa.is_all_docx_in_archive(env, cfg) == "false"  # one left behind


def test_is_files_moved_downloads(env):
    cfg = {"folder_name": "Test", "file_name": "example.txt"}
    env.write("Downloads/Test/example.txt", "x")
    env.resolve("OldDownloads").mkdir()
    assert waa.is_files_moved_downloads(env, cfg) == "false"
    env.write("OldDownloads/Test/example.txt", "x")
    assert waa.is_files_moved_downloads(env, cfg) == "false"  # copied, not moved
    import shutil

    shutil.rmtree(env.resolve("Downloads/Test"))
    assert waa.is_files_moved_downloads(env, cfg) == "true"


def test_vm_active_window_title(env, monkeypatch):
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(0, "Documents\n", "")))
    assert desktop.vm_active_window_title(env, {}) == "Documents"
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(1, "", "XGetWindowProperty failed")))
    assert desktop.vm_active_window_title(env, {}) is None
    monkeypatch.setattr(env, "shell", _FakeShell(env, ShellResult(127, "", "bash: xdotool: command not found")))
    with pytest.raises(InfraError, match="xdotool"):
        desktop.vm_active_window_title(env, {})
