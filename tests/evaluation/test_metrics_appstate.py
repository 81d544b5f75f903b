import json
import sqlite3
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.appstate.chromium import check_font_size, check_history_deleted, is_expected_bookmarks
from mcpworld.evaluation.metrics.appstate.directory import check_moved_jpgs
from mcpworld.evaluation.metrics.appstate.gimp import check_config_status
from mcpworld.evaluation.metrics.appstate.libreoffice import check_libre_locale, find_default_font
from mcpworld.evaluation.metrics.appstate.vlc import (
    check_global_key_play_pause,
    check_one_instance_when_started_from_file,
    check_play_and_exit,
    check_qt_bgcone,
    check_qt_max_volume,
    check_qt_minimal_view,
    check_qt_slider_colours,
    check_qt_video_resize,
    is_vlc_recordings_folder,
)
from mcpworld.evaluation.metrics.appstate.vscode import check_json_keybindings, check_json_settings, loads_jsonc
from mcpworld.evaluation.registry import METRICS

NAMES = [
    "check_config_status",
    "is_vlc_recordings_folder",
    "check_qt_bgcone",
    "check_qt_max_volume",
    "check_qt_minimal_view",
    "check_qt_slider_colours",
    "check_qt_video_resize",
    "check_global_key_play_pause",
    "check_one_instance_when_started_from_file",
    "check_play_and_exit",
    "find_default_font",
    "check_libre_locale",
    "check_json_settings",
    "check_json_keybindings",
    "is_expected_bookmarks",
    "check_history_deleted",
    "check_font_size",
    "check_moved_jpgs",
]


def test_metrics_are_registered():
    assert all(name in METRICS for name in NAMES)


# --- GIMP -------------------------------------------------------------------------------------------

GIMPRC = """# GIMP gimprc
#
# This is your personal gimprc file.

(theme "Light")
(undo-levels 100)
(default-view
    (show-menubar no)
    (padding-color light-check))
(icon-theme "Symbolic") # comment after a form
(theme "Light")

# end of gimprc
"""


def test_check_config_status(local):
    """OSWorld's line reading: first word = key, last word = value, quotes included."""
    path = local("gimprc", GIMPRC)
    assert check_config_status(path, {"key": "theme", "value": '"Light"'}) == 1.0
    assert check_config_status(path, {"key": "theme", "value": "Light"}) == 0.0  # the quotes are part of the word
    assert check_config_status(path, {"key": "theme", "value": '"Dark"'}) == 0.0
    assert check_config_status(path, {"key": "undo-levels", "value": "100"}) == 1.0
    assert check_config_status(path, {"key": "undo-levels", "value": 100}) == 0.0  # compared as text
    # a nested setting sits on its own line: its name is the first word there
    assert check_config_status(path, {"key": "show-menubar", "value": "no"}) == 1.0
    assert check_config_status(path, {"key": ["default-view", "show-menubar"], "value": "no"}) == 0.0
    assert (
        check_config_status(
            local("one", "(default-view show-menubar no)\n"), {"key": ["default-view", "show-menubar"], "value": "no"}
        )
        == 1.0
    )
    assert check_config_status(path, {"key": "show-tips", "value": "yes"}) == 0.0
    # a value with spaces never matches; a line of spaces before the match ends the scan (OSWorld raised)
    spaced = local("sp", '(layer-new-name "My Square")\n')
    assert check_config_status(spaced, {"key": "layer-new-name", "value": '"My Square"'}) == 0.0
    assert check_config_status(local("blank", "   \n(undo-levels 100)\n"), {"key": "undo-levels", "value": "100"}) == 0.0


def test_check_config_status_missing_and_bad(local):
    assert check_config_status(None, {"key": "theme", "value": "x"}) == 0.0
    assert check_config_status("/nonexistent/gimprc", {"key": "theme", "value": "x"}) == 0.0
    assert check_config_status(local("bad", "(theme (oops"), {"key": "theme", "value": "x"}) == 0.0
    with pytest.raises(UserError, match="'value'"):
        check_config_status(None, {"key": "theme"})
    with pytest.raises(UserError, match="'key'"):
        check_config_status(None, {"key": 3, "value": "x"})


# --- VLC --------------------------------------------------------------------------------------------

VLCRC = """\ufeff###
### vlc 3.0.16
###
[qt] # Qt interface
# Show background cone (boolean)
qt-bgcone=0
#qt-max-volume=125
qt-max-volume=200
# qt-minimal-view=0
qt-slider-colours=10;20;30;0;0;0;99;99;99;50;50;50
[core] # core program
input-record-path=/home/user/Desktop
#one-instance-when-started-from-file=1
one-instance-when-started-from-file=0
global-key-play-pause=Ctrl+Space
"""


@pytest.fixture
def vlcrc(local):
    return local("vlcrc", VLCRC)


@pytest.fixture
def default_vlcrc(local):
    return local("default_vlcrc", "[qt]\n#qt-bgcone=1\n#qt-max-volume=125\n[core]\n#global-key-play-pause=\n")


def test_vlc_simple_settings(vlcrc, default_vlcrc):
    assert check_qt_bgcone(vlcrc, {"expected_qt_bgcone": 0}) == 1.0
    assert check_qt_bgcone(default_vlcrc, {"expected_qt_bgcone": 0}) == 0.0
    assert check_qt_bgcone(default_vlcrc, {"expected_qt_bgcone": 1}) == 1.0  # default 1
    assert check_qt_bgcone(default_vlcrc, {"expected_qt_bgcone": True}) == 0.0  # OSWorld compares "True" with "1"
    assert check_qt_max_volume(vlcrc, {"expected_qt_max_volume": 200.0}) == 0.0  # "200.0" is not "200"
    assert check_qt_max_volume(vlcrc, {"expected_qt_max_volume": 200}) == 1.0
    assert check_qt_max_volume(vlcrc, {"expected_qt_max_volume": "200"}) == 1.0
    assert check_qt_max_volume(default_vlcrc, {"expected_qt_max_volume": 200}) == 0.0
    assert check_qt_max_volume(default_vlcrc, {"expected_qt_max_volume": 125}) == 1.0
    assert check_qt_minimal_view(vlcrc, {"expected_qt_minimal_view": 0}) == 1.0
    assert check_qt_minimal_view(vlcrc, {"expected_qt_minimal_view": 1}) == 0.0
    assert check_one_instance_when_started_from_file(vlcrc, {"expected_one_instance_when_started_from_file": 0}) == 1.0
    assert check_one_instance_when_started_from_file(default_vlcrc, {"expected_one_instance_when_started_from_file": 0}) == 0.0
    assert check_play_and_exit(default_vlcrc, {"expected_play_and_exit": 0}) == 1.0
    assert check_play_and_exit(default_vlcrc, {"expected_play_and_exit": 1}) == 0.0
    assert check_qt_video_resize(default_vlcrc, {"expected_qt_video_autoresize": 1}) == 1.0
    assert check_qt_video_resize(default_vlcrc, {"expected_qt_video_autoresize": 0}) == 0.0


def test_vlc_missing_file_scores_zero_not_typeerror(local):
    for fn, rules in [
        (check_qt_bgcone, {"expected_qt_bgcone": 1}),
        (check_qt_max_volume, {"expected_qt_max_volume": 125}),
        (check_qt_minimal_view, {"expected_qt_minimal_view": 0}),
        (check_qt_video_resize, {"expected_qt_video_autoresize": 1}),
        (check_one_instance_when_started_from_file, {"expected_one_instance_when_started_from_file": 1}),
        (check_play_and_exit, {"expected_play_and_exit": 0}),
        (check_global_key_play_pause, {"expected_global_key_play_pause": 0}),
        (check_qt_slider_colours, {"type": "blackish"}),
        (is_vlc_recordings_folder, {"recording_file_path": "/home/user"}),
    ]:
        assert fn(None, rules) == 0.0
        assert fn("/nonexistent/vlcrc", rules) == 0.0


def test_vlc_bad_rules():
    with pytest.raises(UserError, match="expected_qt_max_volume"):
        check_qt_max_volume(None, {"max": 200})
    with pytest.raises(UserError, match="recording_file_path"):
        is_vlc_recordings_folder(None, {})
    with pytest.raises(UserError, match="type"):
        check_qt_slider_colours(None, {"type": "pinkish"})


def test_is_vlc_recordings_folder(vlcrc, default_vlcrc):
    assert is_vlc_recordings_folder(vlcrc, {"recording_file_path": "/home/user/Desktop"}) == 1.0
    # compared exactly, as OSWorld: no ~ expansion or trailing-slash folding
    assert is_vlc_recordings_folder(vlcrc, {"recording_file_path": "~/Desktop"}) == 0.0
    assert is_vlc_recordings_folder(vlcrc, {"recording_file_path": "/home/user/Desktop/"}) == 0.0
    assert is_vlc_recordings_folder(vlcrc, {"recording_file_path": "/home/user/Videos"}) == 0.0
    assert is_vlc_recordings_folder(default_vlcrc, {"recording_file_path": ""}) == 0.0


def test_check_global_key_play_pause(vlcrc, default_vlcrc):
    assert check_global_key_play_pause(vlcrc, {"expected_global_key_play_pause": 1}) == 1.0
    assert check_global_key_play_pause(vlcrc, {"expected_global_key_play_pause": 0}) == 0.0
    assert check_global_key_play_pause(default_vlcrc, {"expected_global_key_play_pause": 0}) == 1.0
    assert check_global_key_play_pause(default_vlcrc, {"expected_global_key_play_pause": True}) == 0.0
    assert check_global_key_play_pause(vlcrc, {"expected_global_key_play_pause": "1"}) == 1.0
    # OSWorld compares "1"/"0" with the rule as text: a key name or true never matches
    assert check_global_key_play_pause(vlcrc, {"expected_global_key_play_pause": "ctrl+space"}) == 0.0
    assert check_global_key_play_pause(vlcrc, {"expected_global_key_play_pause": True}) == 0.0


def test_check_qt_slider_colours(vlcrc, default_vlcrc, local):
    assert check_qt_slider_colours(vlcrc, {"type": "blackish"}) == 1.0
    assert check_qt_slider_colours(vlcrc, {"type": "blackish", "threshold": 60}) == 1.0  # OSWorld's bound is always 100
    assert check_qt_slider_colours(default_vlcrc, {"type": "blackish"}) == 0.0
    match = {"type": "match", "expected_qt_slider_colours": "10;20;30;0;0;0;99;99;99;50;50;50"}
    assert check_qt_slider_colours(vlcrc, match) == 1.0
    assert check_qt_slider_colours(default_vlcrc, match) == 0.0
    # a trailing partial triple is ignored (zip), a non-number scores 0
    assert check_qt_slider_colours(local("odd", "qt-slider-colours=1;2\n"), {"type": "blackish"}) == 1.0
    assert check_qt_slider_colours(local("nan", "qt-slider-colours=a;b;c\n"), {"type": "blackish"}) == 0.0
    # a commented-out line counts too, as in OSWorld
    commented = local("c", "qt-slider-colours=0;0;0\n#qt-slider-colours=200;0;0\n")
    assert check_qt_slider_colours(commented, {"type": "blackish"}) == 0.0


# --- LibreOffice ------------------------------------------------------------------------------------

XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
           xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Standard"
      oor:op="fuse"><value>Times New Roman</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Heading"
      oor:op="fuse"><value>Arial</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale"
      oor:op="fuse"><value>de-DE</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="List"
      oor:op="fuse"><value><it>a</it><it>b</it></value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Font/Substitution"><node oor:name="Replacement"
      oor:op="replace"><prop oor:name="Never"><value xsi:nil="true"/></prop></node></item>
</oor:items>
"""


def test_xcu_with_entities_is_refused(local, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("Times New Roman")
    evil = XCU.replace(
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<?xml version="1.0"?><!DOCTYPE oor:items [<!ENTITY x SYSTEM "file://{secret}">]>',
    )
    evil = evil.replace("<value>Times New Roman</value>", "<value>&x;</value>")
    assert find_default_font(local("evil2.xcu", evil), {"font_name": "Times New Roman"}) == 0.0


def test_find_default_font(local):
    path = local("r.xcu", XCU)
    assert find_default_font(path, {"font_name": "Times New Roman"}) == 1.0
    assert find_default_font(path, {"font_name": "Liberation Serif"}) == 0.0
    assert find_default_font(path, {"font_name": "Arial", "font_type": "Heading"}) == 1.0
    assert (
        find_default_font(
            local("empty.xcu", '<oor:items xmlns:oor="http://openoffice.org/2001/registry"/>'), {"font_name": "Times New Roman"}
        )
        == 0.0
    )
    assert find_default_font(None, {"font_name": "Arial"}) == 0.0
    assert find_default_font("/nonexistent.xcu", {"font_name": "Arial"}) == 0.0
    with pytest.raises(UserError, match="font_name"):
        find_default_font(path, {})


def test_check_libre_locale(local):
    path = local("r.xcu", XCU)
    assert check_libre_locale(path, {"locale_set": ["de-*", "fr-FR"]}) == 1.0
    assert check_libre_locale(path, {"locale_set": ["en-US"]}) == 0.0
    assert check_libre_locale(path, {"locale_set": ["DE-*"]}) == 0.0  # case-sensitive
    unset = local("unset.xcu", '<oor:items xmlns:oor="http://openoffice.org/2001/registry"/>')
    assert check_libre_locale(unset, {"locale_set": ["*"]}) == 0.0  # not the grading host's locale
    assert check_libre_locale(None, {"locale_set": ["de-*"]}) == 0.0
    with pytest.raises(UserError, match="locale_set"):
        check_libre_locale(path, {"locale_set": 5})


# --- VS Code ----------------------------------------------------------------------------------------

SETTINGS = """// user settings
{
    "editor.fontSize": 14, // inline comment
    /* block
       comment */
    "files.autoSave": "afterDelay",
    "url": "http://example.com/*not a comment*/",
    "python.analysis.extraPaths": ["a", "b",],
}
"""


def test_loads_jsonc():
    data = loads_jsonc(SETTINGS)
    assert data["url"] == "http://example.com/*not a comment*/"
    assert data["python.analysis.extraPaths"] == ["a", "b"]
    with pytest.raises(ValueError):
        loads_jsonc("{/* unterminated")


def test_check_json_settings(local):
    path = local("settings.json", SETTINGS)
    assert check_json_settings(path, {"expected": {"editor.fontSize": 14, "files.autoSave": "afterDelay"}}) == 1.0
    assert check_json_settings(path, {"expected": {"editor.fontSize": 12}}) == 0.0
    assert check_json_settings(path, {"expected": {"editor.wordWrap": "on"}}) == 0.0
    assert check_json_settings(local("list.json", "[]"), {"expected": {"a": 1}}) == 0.0
    assert check_json_settings(local("bad.json", "{"), {"expected": {"a": 1}}) == 0.0
    assert check_json_settings(None, {"expected": {"a": 1}}) == 0.0
    with pytest.raises(UserError, match="'expected'"):
        check_json_settings(path, {"expected": ["a"]})


KEYBINDINGS = """// Place your key bindings in this file to override the defaults
[
    {
        "key": "Shift+Ctrl+K",
        "command": "editor.action.deleteLines",
        "when": "textInputFocus"
    },
    {"key": "ctrl+j", "command": "-workbench.action.togglePanel"},
]
"""


def test_check_json_keybindings(local):
    path = local("keybindings.json", KEYBINDINGS)
    want = {"key": "Shift+Ctrl+K", "command": "editor.action.deleteLines", "when": "textInputFocus"}
    assert check_json_keybindings(path, {"expected": want}) == 1.0
    assert check_json_keybindings(path, {"expected": {"key": "ctrl+j", "command": "-workbench.action.togglePanel"}}) == 1.0
    # compared as OSWorld does: the same dict, the key chord exactly as written
    assert check_json_keybindings(path, {"expected": {**want, "key": "ctrl+shift+k"}}) == 0.0
    assert check_json_keybindings(path, {"expected": [want]}) == 0.0  # a list is not an entry
    assert check_json_keybindings(path, {"expected": {"key": "Shift+Ctrl+K", "command": "editor.action.deleteLines"}}) == 0.0
    assert check_json_keybindings(local("obj.json", "{}"), {"expected": want}) == 0.0
    assert check_json_keybindings(None, {"expected": want}) == 0.0
    # OSWorld also tries the file without its first line
    assert check_json_keybindings(local("g.json", "garbage\n" + json.dumps([want])), {"expected": want}) == 1.0


# --- Chromium ---------------------------------------------------------------------------------------


def _bookmark(name, url):
    return {"type": "url", "name": name, "url": url}


ROOTS = {
    "bookmark_bar": {
        "type": "folder",
        "children": [
            {
                "type": "folder",
                "name": "Liked Authors",
                "children": [_bookmark("A", "https://a.example.com/"), _bookmark("B", "https://b.example.com/x")],
            },
            {"type": "folder", "name": "Work", "children": []},
            _bookmark("Site", "https://site.example.com/"),
        ],
    },
    "other": {"type": "folder", "children": []},
}


def test_is_expected_bookmarks_folders_and_urls(tmp_path):
    folders = {"type": "bookmark_bar_folders_names", "names": ["Work", "Liked Authors"]}
    assert is_expected_bookmarks(ROOTS, folders) == 1.0
    assert is_expected_bookmarks({"roots": ROOTS, "version": 1}, folders) == 0.0  # the getter gives the roots
    assert is_expected_bookmarks(ROOTS, {**folders, "names": ["Work"]}) == 0.0
    assert is_expected_bookmarks(ROOTS, {**folders, "names": ["Work"], "allow_extra": True}) == 1.0
    urls = {"type": "bookmark_bar_websites_urls", "urls": ["https://site.example.com"]}
    assert is_expected_bookmarks(ROOTS, urls) == 0.0  # URLs compared exactly, as OSWorld
    assert is_expected_bookmarks(ROOTS, {**urls, "urls": ["https://site.example.com/"]}) == 1.0
    assert is_expected_bookmarks(ROOTS, {**urls, "urls": ["https://other.example.com/"]}) == 0.0
    assert is_expected_bookmarks(None, urls) == 0.0
    assert is_expected_bookmarks({}, urls) == 0.0


def test_is_expected_bookmarks_liked_authors():
    rule = {
        "type": "liked_authors_websites_urls",
        "urls": [["https://a.example.com/", "https://a2.example.com/"], "https://b.example.com/x"],
    }
    assert is_expected_bookmarks(ROOTS, rule) == 1.0
    assert is_expected_bookmarks(ROOTS, {**rule, "urls": ["https://a2.example.com/", "https://b.example.com/x"]}) == 0.0
    assert is_expected_bookmarks(ROOTS, {**rule, "urls": ["https://a.example.com/"]}) == 0.0  # count differs
    # the same URL cannot fill two slots
    assert is_expected_bookmarks(ROOTS, {**rule, "urls": [["https://a.example.com/"], ["https://a.example.com/"]]}) == 0.0
    assert is_expected_bookmarks(ROOTS, {**rule, "folder": "Work", "urls": []}) == 1.0
    assert is_expected_bookmarks(ROOTS, {**rule, "folder": "Missing"}) == 0.0


def test_is_expected_bookmarks_bad_rules():
    with pytest.raises(UserError, match="unknown type"):
        is_expected_bookmarks(ROOTS, {"type": "nope"})
    with pytest.raises(UserError, match="'urls'"):
        is_expected_bookmarks(ROOTS, {"type": "bookmark_bar_websites_urls"})


@pytest.fixture
def history_db(tmp_path):
    path = tmp_path / "History"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, last_visit_time INTEGER)")
        conn.executemany(
            "INSERT INTO urls (url, title, last_visit_time) VALUES (?, ?, 0)",
            [("https://www.youtube.com/watch?v=1", "Video"), ("https://docs.python.org/3/", "Python")],
        )
    conn.close()
    return str(path)


def test_check_history_deleted(history_db, tmp_path):
    before = Path(history_db).read_bytes()
    assert check_history_deleted(history_db, {"type": "keywords", "keywords": ["amazon", "ebay"]}) == 1.0
    assert check_history_deleted(history_db, {"type": "keywords", "keywords": ["youtube"]}) == 0.0
    assert check_history_deleted(history_db, {"type": "keywords", "keywords": ["YouTube"]}) == 1.0  # case-sensitive
    assert Path(history_db).read_bytes() == before  # opened read-only
    rows = [("https://amazon.com/", "A", 0)]
    assert check_history_deleted(rows, {"type": "keywords", "keywords": ["amazon"]}) == 0.0
    assert check_history_deleted([], {"type": "keywords", "keywords": ["amazon"]}) == 1.0
    assert check_history_deleted(None, {"type": "keywords", "keywords": ["amazon"]}) == 0.0
    not_db = tmp_path / "junk"
    not_db.write_text("not sqlite at all, just text" * 10)
    assert check_history_deleted(str(not_db), {"type": "keywords", "keywords": ["amazon"]}) == 0.0
    with pytest.raises(UserError, match="keywords"):
        check_history_deleted(history_db, {"type": "keywords"})
    with pytest.raises(UserError, match="type"):
        check_history_deleted(history_db, {"type": "domains", "keywords": []})


def test_check_font_size():
    sizes = {"default_font_size": 20, "default_fixed_font_size": 13, "minimum_font_size": 0}
    assert check_font_size(sizes, {"type": "value", "value": 20}) == 1.0
    assert check_font_size(sizes, {"type": "value", "value": 16}) == 0.0
    assert check_font_size(sizes, {"type": "range", "min": 16, "max": 24}) == 1.0
    assert check_font_size(sizes, {"type": "range", "min": 20, "max": 24}) == 0.0  # strict
    # no default_font_size in the dict: 0 (OSWorld raised); the getter fills Chromium's defaults in
    assert check_font_size({"webkit": {"webprefs": {"minimum_font_size": 8}}}, {"type": "value", "value": 16}) == 0.0
    assert (
        check_font_size(
            {"webkit": {"webprefs": {"minimum_font_size": 8}}}, {"type": "value", "value": 8, "key": "minimum_font_size"}
        )
        == 1.0
    )
    assert check_font_size({"webkit": "junk"}, {"type": "value", "value": 16}) == 0.0
    assert check_font_size(None, {"type": "value", "value": 16}) == 0.0
    assert check_font_size(sizes, {"type": "range", "min": "small", "max": 24}) == 0.0  # OSWorld raised
    with pytest.raises(UserError, match="type"):
        check_font_size(sizes, {"type": "huge"})


# --- directory listing ------------------------------------------------------------------------------


def test_check_moved_jpgs():
    rule = {"expected": ["a.jpg", "b.jpg"]}
    assert check_moved_jpgs(["b.jpg", "a.jpg"], rule) == 1.0
    assert check_moved_jpgs({"name": "cpjpg", "children": [{"name": "a.jpg"}, {"name": "b.jpg"}]}, rule) == 1.0
    assert check_moved_jpgs(["a.jpg", "b.jpg", "c.png"], rule) == 0.0
    assert check_moved_jpgs(["a.jpg"], rule) == 0.0
    assert check_moved_jpgs(None, rule) == 0.0
    with pytest.raises(UserError, match="'expected'"):
        check_moved_jpgs([], {"expected": "a.jpg"})


def test_check_moved_jpgs_with_list_directory_getter(env):
    from mcpworld.evaluation.getters.generic import list_directory

    for name in ("a.jpg", "b.jpg"):
        env.write(f"~/Desktop/cpjpg/{name}", "x")
    listing = list_directory(env, {"type": "list_directory", "path": "~/Desktop/cpjpg"})
    assert check_moved_jpgs(listing, {"expected": ["a.jpg", "b.jpg"]}) == 1.0
    assert check_moved_jpgs(list_directory(env, {"type": "list_directory", "path": "~/nope"}), {"expected": []}) == 0.0


def test_jsonc_comment_between_tokens_is_whitespace(local):
    with pytest.raises(ValueError):
        loads_jsonc("[1/**/2]")
    assert check_json_settings(local("deep.json", "[" * 100_000 + "]" * 100_000), {"expected": {"a": 1}}) == 0.0


VLC_STATUS = """<?xml version="1.0" encoding="utf-8" standalone="yes" ?>
<root><fullscreen>0</fullscreen><state>{state}</state><loop>false</loop>
<information><category name="meta"><info name='filename'>{name}</info><info name='url'>{url}</info></category>
</information></root>"""


@pytest.mark.parametrize(
    "state,name,rules,score",
    [
        ("playing", "tone.wav", {"type": "file_name", "file_name": "tone.wav"}, 1.0),
        ("playing", "My Music - tone.wav", {"type": "file_name", "file_name": "tone.wav"}, 1.0),  # an ending, as OSWorld
        ("paused", "tone.wav", {"type": "file_name", "file_name": "tone.wav"}, 0.0),
        ("playing", "other.wav", {"type": "file_name", "file_name": "tone.wav"}, 0.0),
        ("playing", "x", {"type": "url", "url": "example.org/live.m3u8"}, 1.0),
    ],
)
def test_is_vlc_playing(tmp_path, state, name, rules, score):
    from mcpworld.evaluation.metrics.appstate.vlc import is_vlc_playing

    path = tmp_path / "status.xml"
    path.write_text(VLC_STATUS.format(state=state, name=name, url="https://example.org/live.m3u8"))
    assert is_vlc_playing(str(path), rules) == score


def test_is_vlc_playing_without_a_status_scores_0_and_a_bad_rule_is_an_error():
    from mcpworld.core.errors import UserError
    from mcpworld.evaluation.metrics.appstate.vlc import is_vlc_playing

    assert is_vlc_playing(None, {"type": "file_name", "file_name": "a"}) == 0.0
    with pytest.raises(UserError, match="is_vlc_playing"):
        is_vlc_playing(None, {"file_name": "a"})


def test_check_auto_saving_time_reads_the_documents_autosave_interval(tmp_path):
    from mcpworld.evaluation.metrics.appstate.libreoffice import check_auto_saving_time

    xcu = tmp_path / "registrymodifications.xcu"
    item = (
        '<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" '
        'oor:op="fuse"><value>{}</value></prop></item>'
    )
    head = '<?xml version="1.0"?><oor:items xmlns:oor="http://openoffice.org/2001/registry">'
    xcu.write_text(head + item.format(3) + "</oor:items>")
    assert check_auto_saving_time(str(xcu), {"minutes": 3}) == 1.0
    assert check_auto_saving_time(str(xcu), {"minutes": 10}) == 0.0
    xcu.write_text(head + "</oor:items>")
    assert check_auto_saving_time(str(xcu), {"minutes": 3}) == 0.0  # never set: LibreOffice's default
    assert check_auto_saving_time(None, {"minutes": 3}) == 0.0


def test_check_presenter_console_disable(tmp_path):
    from mcpworld.evaluation.metrics.appstate.libreoffice import check_presenter_console_disable

    xcu = tmp_path / "registrymodifications.xcu"
    head = '<?xml version="1.0"?><oor:items xmlns:oor="http://openoffice.org/2001/registry">'
    item = (
        '<item oor:path="/org.openoffice.Office.Impress/Misc/Start"><prop oor:name="EnablePresenterScreen" '
        'oor:op="fuse"><value>{}</value></prop></item>'
    )
    xcu.write_text(head + item.format("false") + "</oor:items>")
    assert check_presenter_console_disable(str(xcu)) == 1.0
    xcu.write_text(head + item.format("false") + item.format("true") + "</oor:items>")
    assert check_presenter_console_disable(str(xcu)) == 1.0  # the first entry counts, as in OSWorld
    xcu.write_text(head + item.format(" false ") + "</oor:items>")
    assert check_presenter_console_disable(str(xcu)) == 0.0  # not trimmed
    xcu.write_text(head + "</oor:items>")
    assert check_presenter_console_disable(str(xcu)) == 0.0  # never set: on by default
    assert check_presenter_console_disable(None) == 0.0


# --- Thunderbird ------------------------------------------------------------------------------------

from mcpworld.evaluation.metrics.appstate.thunderbird import (  # noqa: E402
    check_thunderbird_filter,
    check_thunderbird_folder,
    check_thunderbird_prefs,
    thunderbird_filters,
)

PREFS_JS = r"""// Mozilla User Preferences

// DO NOT EDIT THIS FILE.
user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");
user_pref("mail.identity.id1.auto_quote", false);
user_pref("mail.identity.id1.htmlSigText", "Anonym\nXYZ Lab");
user_pref("mail.imap.use_status_for_biff", false);
user_pref("mail.server.default.applyIncomingFilters", true);
user_pref("mail.server.default.autosync_offline_stores", true);
user_pref("mail.server.server1.name", "anonym \"x\"");
user_pref("mailnews.start_page_override.mstone", "115.6.0");
"""


def test_thunderbird_metrics_are_registered():
    assert {"check_thunderbird_prefs", "check_thunderbird_filter", "check_thunderbird_folder"} <= set(METRICS)


def test_check_thunderbird_prefs(local):
    prefs = local("prefs.js", PREFS_JS)
    # the OSWorld tasks' rules
    signature = {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\\nXYZ Lab"}}
    assert check_thunderbird_prefs(prefs, {"expect": signature}) == 1.0
    assert check_thunderbird_prefs(prefs, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}) == 1.0
    assert check_thunderbird_prefs(prefs, {"expect": {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}}) == 1.0
    assert check_thunderbird_prefs(prefs, {"expect": {"mail.server.server1.name": {"method": "eq", "ref": 'anonym "x"'}}}) == 1.0
    both = {
        "expect": {
            "mail.server.default.applyIncomingFilters": {"method": "eq", "ref": True},
            "mail.imap.use_status_for_biff": {"method": "eq", "ref": False},
        },
        "unexpect": {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": False}},
    }
    assert check_thunderbird_prefs(prefs, both) == 1.0
    # the unexpected value present, a wrong value, a pref left at its default (absent)
    unexpected = {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": True}}
    assert check_thunderbird_prefs(prefs, {**both, "unexpect": unexpected}) == 0.0
    assert check_thunderbird_prefs(prefs, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": True}}}) == 0.0
    assert check_thunderbird_prefs(prefs, {"expect": {"mail.identity.id1.reply_on_top": {"method": "eq", "ref": 1}}}) == 0.0
    assert check_thunderbird_prefs(None, {"expect": {"a": {"method": "eq", "ref": 1}}}) == 0.0
    assert check_thunderbird_prefs(prefs + ".missing", {"expect": {"a": {"method": "eq", "ref": 1}}}) == 0.0


def test_check_thunderbird_prefs_last_line_wins_and_bad_rules(local):
    prefs = local("prefs.js", 'user_pref("a.b", 1);\nuser_pref("a.b", 2);\n')
    assert check_thunderbird_prefs(prefs, {"expect": {"a.b": {"method": "eq", "ref": 2}}}) == 1.0
    assert check_thunderbird_prefs(prefs, {"expect": {"a.b": {"method": "eq", "ref": 1}}}) == 0.0
    with pytest.raises(UserError, match="expect"):
        check_thunderbird_prefs(prefs, {"expect": ["a.b"]})
    with pytest.raises(UserError, match="needs 'expect' or 'unexpect'"):
        check_thunderbird_prefs(prefs, {})


FILTER_RULES = r"""version="9"
logging="no"
name="Promotions"
enabled="yes"
type="17"
action="Move to folder"
actionValue="mailbox://nobody@Local%20Folders/Promotions"
condition="AND (subject,contains,discount)"
name="Forward \"all\""
enabled="no"
type="17"
action="Forward"
actionValue="anonym-x2024@gmail.com"
action="Mark read"
condition="ALL"
name="Two terms"
enabled="yes"
type="17"
action="Delete"
condition="OR (from,contains,spam@x.org) OR (\"X-Spam\",is,\"yes, really\")"
"""


def test_thunderbird_filters_parse(local):
    filters = thunderbird_filters(FILTER_RULES)
    assert [f["name"] for f in filters] == ["Promotions", 'Forward "all"', "Two terms"]
    # the last action line wins (OSWorld keeps one action per filter)
    assert filters[1]["action"] == "Mark read" and filters[1]["actionValue"] == "anonym-x2024@gmail.com"
    # OSWorld's term pattern wants a bare header name: the quoted custom header is not a term
    assert filters[2]["condition"] == ["OR (from,contains,spam@x.org)"]
    assert thunderbird_filters('enabled="yes"\nname="x"\n') is None  # a field before any name: OSWorld raised


def test_check_thunderbird_filter(local):
    path = local("msgFilterRules.dat", FILTER_RULES)
    move = {
        "enabled": "yes",
        "action": "Move to folder",
        "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
        "condition": ["AND (subject,contains,discount)"],
    }
    assert check_thunderbird_filter(path, {"expect": [move]}) == 1.0
    # a filter shows only its last action, as in OSWorld
    forward = {"action": "Forward", "actionValue": "anonym-x2024@gmail.com", "condition": ["ALL"]}
    assert check_thunderbird_filter(path, {"expect": [forward]}) == 0.0
    assert check_thunderbird_filter(path, {"expect": [{"action": "Mark read", "condition": ["ALL"]}]}) == 1.0
    # the OSWorld rule for the forward task wants it enabled: this filter is disabled
    assert check_thunderbird_filter(path, {"expect": [{"enabled": "yes", "action": "Forward", "condition": ["ALL"]}]}) == 0.0
    assert check_thunderbird_filter(path, {"expect": [{**move, "condition": ["AND (subject,contains,sale)"]}]}) == 0.0
    assert check_thunderbird_filter(path, {"expect": [move], "unexpect": [{"action": "Delete"}]}) == 0.0
    assert check_thunderbird_filter(path, {"expect": [move], "unexpect": [{"action": "Copy to folder"}]}) == 1.0
    assert check_thunderbird_filter(None, {"expect": [move]}) == 0.0
    with pytest.raises(UserError, match="expect"):
        check_thunderbird_filter(path, {"expect": move})


def _message(n: int, status: str = "0001", keys: str = "") -> str:
    return (
        f"From - Mon Jan 0{n} 10:00:00 2024\nX-Mozilla-Status: {status}\nX-Mozilla-Status2: 00000000\n"
        f"X-Mozilla-Keys: {keys}\nFrom: bills@example.org\nSubject: Bill {n}\nMIME-Version: 1.0\n\n"
        f"Amount due: {n}00 EUR\nFrom the accounts team\n\n"
    )


def test_check_thunderbird_folder(local):
    gold = local("Bills_gold", _message(1) + _message(2))
    # same messages, other order, other separator times, a moved-away (expunged) copy and a duplicate
    moved = _message(3, status="0009").replace("Jan 03", "Feb 03")
    same = local("Bills", _message(2).replace("Jan 02", "Mar 09") + moved + _message(1) + _message(1))
    assert check_thunderbird_folder(same, gold, remove_deleted=True, remove_duplicate=True) == 1.0
    assert check_thunderbird_folder(same, gold, remove_deleted=False) == 0.0
    assert check_thunderbird_folder(same, gold, remove_duplicate=False) == 0.0
    # a message missing, or another message in its place
    assert check_thunderbird_folder(local("short", _message(1)), gold) == 0.0
    assert check_thunderbird_folder(local("other", _message(1) + _message(4)), gold) == 0.0
    # read state / tags differ: only equal when told to ignore them
    unread = local("unread", _message(1, status="0000", keys="$label1") + _message(2, status="0000"))
    assert check_thunderbird_folder(unread, gold) == 0.0
    assert check_thunderbird_folder(unread, gold, ignore_status=True) == 0.0
    assert check_thunderbird_folder(unread, gold, ignore_status=True, ignore_keys=True) == 1.0
    # lists (vm_file multi), a missing result file
    assert check_thunderbird_folder([same, gold], [gold, gold]) == 1.0
    assert check_thunderbird_folder([same, None], [gold, gold]) == 0.0
    assert check_thunderbird_folder(None, gold) == 0.0
    with pytest.raises(UserError, match="equally long"):
        check_thunderbird_folder([same], [gold, gold])


def test_check_thunderbird_folder_single_messages(local):
    eml = "From: x@example.org\r\nSubject: Receipt\r\n\r\nFrom here on, thanks.\r\n"
    assert check_thunderbird_folder(local("a.eml", eml), local("b.eml", eml.replace("\r\n", "\n"))) == 1.0
    assert check_thunderbird_folder(local("c.eml", eml), local("d.eml", eml.replace("thanks", "bye"))) == 0.0


def _status(tmp_path, state, **meta):
    infos = "".join(f'<info name="{k}">{v}</info>' for k, v in meta.items())
    path = tmp_path / f"status-{len(list(tmp_path.iterdir()))}.xml"
    path.write_text(f'<root><state>{state}</state><information><category name="meta">{infos}</category></information></root>')
    return str(path)


def test_is_vlc_playing_reads_the_fields_osworld_reads(tmp_path):
    from mcpworld.evaluation.metrics.appstate.vlc import is_vlc_playing

    name = {"type": "file_name", "file_name": "clip.mp4"}
    assert is_vlc_playing(_status(tmp_path, "playing", filename="/home/user/clip.mp4"), name) == 1.0
    assert is_vlc_playing(_status(tmp_path, "playing", title="clip.mp4"), name) == 1.0  # the title when no filename
    assert is_vlc_playing(_status(tmp_path, "paused", filename="clip.mp4"), name) == 0.0
    assert is_vlc_playing(_status(tmp_path, "playing", filename="clip.mp4"), {"type": "title"}) == 0.0
    url = {"type": "url", "url": "https://cdn.example.com/videos/master.m3u8"}
    assert is_vlc_playing(_status(tmp_path, "playing", filename="master.m3u8"), url) == 1.0  # the URL's file name
    assert is_vlc_playing(_status(tmp_path, "playing", url="see https://cdn.example.com/videos/master.m3u8"), url) == 1.0
    assert is_vlc_playing(_status(tmp_path, "playing", url="https://cdn.example.com/videos/master.m3u8/x"), url) == 1.0
    assert is_vlc_playing(_status(tmp_path, "playing", url="https://other.example.com/master2.m3u8"), url) == 0.0


def test_libreoffice_settings_read_as_osworld(tmp_path):
    from mcpworld.evaluation.metrics.appstate.libreoffice import check_auto_saving_time

    head = '<?xml version="1.0"?><oor:items xmlns:oor="http://openoffice.org/2001/registry">'

    def xcu(*items):
        path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.xcu"
        path.write_text(head + "".join(items) + "</oor:items>")
        return str(path)

    def item(path, prop, value):
        return f'<item oor:path="{path}"><prop oor:name="{prop}"><value>{value}</value></prop></item>'

    l10n = "/org.openoffice.Setup/L10N"
    # no ooSetupSystemLocale: OSWorld falls back to ooLocale
    assert check_libre_locale(xcu(item(l10n, "ooLocale", "de-DE")), {"locale_set": ["de-*"]}) == 1.0
    assert (
        check_libre_locale(
            xcu(item(l10n, "ooSetupSystemLocale", "en-US"), item(l10n, "ooSetupSystemLocale", "de-DE")), {"locale_set": ["de-*"]}
        )
        == 0.0
    )  # the first one counts
    save = "/org.openoffice.Office.Common/Save/Document"
    assert check_auto_saving_time(xcu(item(save, "AutoSaveTimeIntervall", " 3 ")), {"minutes": 3}) == 1.0
    assert check_auto_saving_time(xcu(item(save, "AutoSaveTimeIntervall", "3")), {"minutes": "3"}) == 0.0  # 3 != "3"
    assert (
        check_auto_saving_time(
            xcu(item(save, "AutoSaveTimeIntervall", "5"), item(save, "AutoSaveTimeIntervall", "3")), {"minutes": 3}
        )
        == 1.0
    )  # the last item counts
    font = "/org.openoffice.Office.Writer/DefaultFont"
    assert find_default_font(xcu(item(font, "Standard", " Times New Roman ")), {"font_name": "Times New Roman"}) == 0.0


def test_thunderbird_prefs_read_as_osworld(local):
    from mcpworld.evaluation.metrics.appstate.thunderbird import check_thunderbird_prefs

    rule = {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}
    assert check_thunderbird_prefs(local("p.js", 'user_pref("mail.identity.id1.auto_quote", false);\n'), rule) == 1.0
    # exactly one space after the comma, as OSWorld's pattern wants
    assert check_thunderbird_prefs(local("q.js", 'user_pref("mail.identity.id1.auto_quote",false);\n'), rule) == 0.0
    # a value that is not JSON anywhere in the file: OSWorld raised, 0
    not_json = local("r.js", 'user_pref("mail.identity.id1.auto_quote", false);\nuser_pref("x", abc);\n')
    assert check_thunderbird_prefs(not_json, rule) == 0.0


def test_moved_jpgs_and_liked_authors_as_osworld():
    assert check_moved_jpgs({}, {"expected": []}) == 0.0  # OSWorld raised on a tree without children
    assert check_moved_jpgs({"children": [{"name": "a.jpg"}]}, {"expected": ["a.jpg"]}) == 1.0
    assert check_moved_jpgs(["a.jpg"], {"expected": ["a.jpg"]}) == 1.0  # our getter's list of names

    def bar(*urls):
        return {
            "bookmark_bar": {
                "children": [{"type": "folder", "name": "Liked Authors", "children": [{"type": "url", "url": u} for u in urls]}]
            }
        }

    rule = {"type": "liked_authors_websites_urls", "urls": [["https://a/", "https://a2/"], ["https://b/"]]}
    assert is_expected_bookmarks(bar("https://a2/", "https://b/"), rule) == 1.0
    assert is_expected_bookmarks(bar("https://a/", "https://b/", "https://b/"), rule) == 1.0  # compared as sets
    assert is_expected_bookmarks(bar("https://a/"), rule) == 0.0
    same = {"type": "liked_authors_websites_urls", "urls": [["https://a/", "https://a2/"], ["https://a/", "https://a2/"]]}
    assert is_expected_bookmarks(bar("https://a/"), same) == 1.0  # both picks may be the same URL
