"""Metrics over application state files: GIMP gimprc, VLC vlcrc, LibreOffice xcu, VS Code JSON,
Chromium profile files, Thunderbird profile files, and a directory listing.

Each metric reads one settings file (a local copy made by a getter) and checks one setting.
A ``None`` path, a missing file or a file that cannot be parsed scores 0. A settings key the app
never wrote means "default" only where the metric says so; otherwise it scores 0 (the task asked
for a change). A malformed rules object raises UserError naming the metric and the key.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.metrics.general import _read_text, read_text_strict, rule_value
from mcpworld.evaluation.registry import metric


def _text_or_none(path: str | None) -> str | None:
    """Text of a local file; None when absent or unreadable (scored 0 by the caller)."""
    try:
        return _read_text(path)
    except OSError:
        return None


# ============================================================================================
# GIMP: gimprc is a list of S-expressions such as (theme "Light") or (default-view (show-menubar no))


_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # lines as a text file iterates them (ends kept)


def _gimprc_words(line: str) -> list[str]:
    """A gimprc line as OSWorld splits it: outer parentheses trimmed, then split on whitespace."""
    return line.strip().lstrip("(").rstrip(")\n").split()


@metric("check_config_status")
def check_config_status(result: str | None, rules: Any) -> float:
    """1 when some gimprc line sets ``rules["key"]`` to ``rules["value"]``, read line by line as OSWorld does.

    result = path of a gimprc (getter ``gimp_config_file``). Each line that is not a comment is
    trimmed of its outer parentheses and split on whitespace; it matches when its first word is the
    key and its last word is the value, quotes included (``(theme "Light")`` needs ``"\\"Light\\""``).
    A two-name key ``[form, setting]`` needs those as the first two words of one line. As in OSWorld,
    a value with spaces never matches, and a line holding only spaces before a match ends the scan
    with 0 (OSWorld raised there).
    """
    key = rule_value(rules, "key", "check_config_status")
    expected = rule_value(rules, "value", "check_config_status")
    if not isinstance(key, (str, list)):
        raise UserError(f"metric 'check_config_status': 'key' must be a name or a list of two names, got {key!r}")
    text = read_text_strict(result)
    if text is None:
        return 0.0
    for line in _LINE.findall(text):
        if line.startswith("#") or line == "\n":
            continue
        words = _gimprc_words(line)
        if not words:
            return 0.0
        if isinstance(key, str):
            if words[0] == key and words[-1] == expected:
                return 1.0
        elif len(key) == 2:
            if len(words) < 2:
                return 0.0
            if words[0] == key[0] and words[1] == key[1] and words[-1] == expected:
                return 1.0
    return 0.0

# ============================================================================================
# VLC: vlcrc is INI-like; "key=value" lines under [module] sections, defaults commented out with #
#
# OSWorld's checks read the vlcrc as UTF-8 and scan it line by line for ``key=``: every line that
# contains it counts, a commented-out default (``#qt-bgcone=1``) included, the last one wins, and
# the value is the text after the line's last ``=``, stripped. It compares that text with the
# expected value as a string (an int rule value turned into its decimal digits, anything else kept
# as it is: ``1.0`` or ``true`` never equal ``"1"``). These metrics score the same way.


def _vlcrc_text(result: str | None) -> str | None:
    """The vlcrc's text (UTF-8); None when absent or not UTF-8 (OSWorld raised: 0)."""
    return read_text_strict(result)


def _vlcrc_lines(text: str) -> list[str]:
    return text.split("\n")


def _vlc_last_value(text: str, needle: str, default: str) -> str:
    """The value of the last line containing ``needle`` (after its last '='), else ``default``."""
    value = default
    for line in _vlcrc_lines(text):
        if needle in line:
            value = line.split("=")[-1].strip()
    return value


def _vlc_rule_text(value: Any) -> Any:
    """The expected value as OSWorld compares it: an int (bool included) becomes ``str(value)``."""
    return str(value) if isinstance(value, int) else value


def _vlc_rule(rules: Any, key: str, metric_name: str) -> Any:
    if not isinstance(rules, dict) or key not in rules:
        raise UserError(f"metric {metric_name!r} needs {key!r} in its rules, got {rules!r}")
    return rules[key]


def _vlc_setting_is(result: str | None, rules: Any, metric_name: str, setting: str, default: str) -> float:
    """1 when the last ``setting=`` line of the vlcrc (``default`` if none) has the expected text."""
    expected = _vlc_rule_text(_vlc_rule(rules, "expected_" + setting.replace("-", "_"), metric_name))
    text = _vlcrc_text(result)
    if text is None:
        return 0.0
    return float(_vlc_last_value(text, setting + "=", default) == expected)


_VLC_META = "information/category[@name='meta']/info[@name='{}']"
# Where OSWorld looks for the playing item, in order; the first non-empty one is used.
_VLC_FILE_FIELDS = ("filename", "title", "uri", "location", "name")
_VLC_URL_FIELDS = [_VLC_META.format(n) for n in ("url", "URI", "location", "title", "filename")] + [
    f"information/category[@name='Stream 0']/info[@name='{n}']" for n in ("Codec", "Type", "Language")]


def _first_text(tree: ET.Element, paths: Iterable[str]) -> str | None:
    for path in paths:
        element = tree.find(path)
        if element is not None and element.text:
            return element.text
    return None


def _url_fits(actual: str, expected: str) -> bool:
    """OSWorld's URL test: contained in the shown text, or the shown text is the URL's file name, or
    both are URLs of the same host and the expected path lies inside the shown one."""
    if expected in actual or actual.endswith(expected):
        return True
    try:
        wanted = urlparse(expected)
        if actual == posixpath.basename(wanted.path):
            return True
        if "://" in actual:
            shown = urlparse(actual)
            return wanted.netloc == shown.netloc and wanted.path in shown.path
    except ValueError:
        pass
    return False


@metric("is_vlc_playing")
def is_vlc_playing(result: str | None, rules: Any = None, **unknown: Any) -> float:
    """1 when VLC's ``status.xml`` (getter ``vlc_playing_info``) has state ``playing`` and its item fits
    the rule, as OSWorld decides it.

    ``{type: file_name, file_name}``: the first non-empty meta ``filename`` / ``title`` / ``uri`` /
    ``location`` / ``name`` has that base name or ends with it. ``{type: url, url}``: the first
    non-empty meta ``url`` / ``URI`` / ``location`` / ``title`` / ``filename`` (or Stream 0's codec,
    type, language) contains the URL, is its file name, or is a URL of the same host whose path
    contains the expected path. Not playing, no status or another rule type: 0.
    """
    if not isinstance(rules, dict) or "type" not in rules:
        raise UserError(f"metric 'is_vlc_playing' needs rules {{type: file_name | url, …}}, got {rules!r}")
    text = read_text_strict(result)
    if text is None:
        return 0.0
    try:
        tree = ET.fromstring(text)
    except ET.ParseError:
        return 0.0
    state = tree.find("state")
    if state is None or state.text != "playing":
        return 0.0
    kind = rules["type"]
    if kind == "file_name":
        expected = _vlc_rule(rules, "file_name", "is_vlc_playing")
        shown = _first_text(tree, [_VLC_META.format(n) for n in _VLC_FILE_FIELDS])
        if not shown:
            return 0.0
        return float(posixpath.basename(shown) == expected or shown.endswith(expected))
    if kind == "url":
        expected = _vlc_rule(rules, "url", "is_vlc_playing")
        shown = _first_text(tree, _VLC_URL_FIELDS)
        return float(bool(shown) and _url_fits(shown, expected))
    return 0.0


@metric("is_vlc_recordings_folder")
def is_vlc_recordings_folder(result: str | None, rules: Any) -> float:
    """1 when VLC's recordings folder (vlcrc ``input-record-path``) is ``rules["recording_file_path"]``.

    result = vlcrc path (getter ``vlc_config``, which writes the episode home as /home/user). As in
    OSWorld the first uncommented line that mentions ``input-record-path`` decides, and its value
    (after the last '=', stripped) must equal the rule's text exactly (no trailing-slash or ``~``
    normalisation). Unset (VLC's default) scores 0.
    """
    expected = _vlc_rule(rules, "recording_file_path", "is_vlc_recordings_folder")
    text = _vlcrc_text(result)
    if text is None:
        return 0.0
    for line in _vlcrc_lines(text):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return float(line.split("=")[-1].strip() == expected)
    return 0.0


@metric("check_qt_bgcone")
def check_qt_bgcone(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-bgcone`` (the cone shown behind audio; default 1) is ``rules["expected_qt_bgcone"]``."""
    return _vlc_setting_is(result, rules, "check_qt_bgcone", "qt-bgcone", "1")


@metric("check_qt_max_volume")
def check_qt_max_volume(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-max-volume`` (default 125) is ``rules["expected_qt_max_volume"]``."""
    return _vlc_setting_is(result, rules, "check_qt_max_volume", "qt-max-volume", "125")


@metric("check_qt_minimal_view")
def check_qt_minimal_view(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-minimal-view`` (default 0) is ``rules["expected_qt_minimal_view"]``."""
    return _vlc_setting_is(result, rules, "check_qt_minimal_view", "qt-minimal-view", "0")


@metric("check_qt_video_resize")
def check_qt_video_resize(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-video-autoresize`` (default 1) is ``rules["expected_qt_video_autoresize"]``
    (not an OSWorld metric; read like the other vlcrc checks)."""
    return _vlc_setting_is(result, rules, "check_qt_video_resize", "qt-video-autoresize", "1")


@metric("check_one_instance_when_started_from_file")
def check_one_instance_when_started_from_file(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``one-instance-when-started-from-file`` (default 1) is
    ``rules["expected_one_instance_when_started_from_file"]``."""
    return _vlc_setting_is(result, rules, "check_one_instance_when_started_from_file",
                           "one-instance-when-started-from-file", "1")


@metric("check_play_and_exit")
def check_play_and_exit(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``play-and-exit`` (default 0) is ``rules["expected_play_and_exit"]``."""
    return _vlc_setting_is(result, rules, "check_play_and_exit", "play-and-exit", "0")


@metric("check_global_key_play_pause")
def check_global_key_play_pause(result: str | None, rules: Any) -> float:
    """1 when VLC's global play/pause hotkey is set (``rules["expected_global_key_play_pause"]`` 1)
    or not (0).

    As in OSWorld the last ``global-key-play-pause=`` line counts as "1" when it has a value and
    "0" when empty (no line: "0"); that is compared with the rule value as text, so a key name
    (``"Ctrl+Space"``) or ``true`` never matches.
    """
    expected = _vlc_rule_text(_vlc_rule(rules, "expected_global_key_play_pause", "check_global_key_play_pause"))
    text = _vlcrc_text(result)
    if text is None:
        return 0.0
    state = "0"
    for line in _vlcrc_lines(text):
        if "global-key-play-pause=" in line:
            state = "1" if line.split("=")[-1].strip() else "0"
    return float(state == expected)


VLC_SLIDER_DEFAULT = "153;210;153;20;210;20;255;199;15;245;39;29"
BLACKISH_BELOW = 100


@metric("check_qt_slider_colours")
def check_qt_slider_colours(result: str | None, rules: Any) -> float:
    """1 when VLC's volume-slider colours (vlcrc ``qt-slider-colours``) fit the rule.

    ``rules["type"]``: ``match`` (the value text equals ``expected_qt_slider_colours``) or
    ``blackish`` (every r;g;b triple has all channels below 100). As in OSWorld the last line that
    mentions ``qt-slider-colours`` gives the value (VLC's default green-to-red palette if none); a
    value that is not ``;``-separated integers scores 0, and a trailing partial triple is ignored.
    """
    kind = _vlc_rule(rules, "type", "check_qt_slider_colours")
    if kind not in ("match", "blackish"):
        raise UserError(f"metric 'check_qt_slider_colours': type must be 'match' or 'blackish', got {kind!r}")
    expected = _vlc_rule(rules, "expected_qt_slider_colours", "check_qt_slider_colours") if kind == "match" else None
    text = _vlcrc_text(result)
    if text is None:
        return 0.0
    value = _vlc_last_value(text, "qt-slider-colours", VLC_SLIDER_DEFAULT)
    if kind == "match":
        return float(value == expected)
    try:
        numbers = [int(part) for part in value.split(";")]
    except ValueError:
        return 0.0
    triples = zip(numbers[0::3], numbers[1::3], numbers[2::3])
    return float(all(channel < BLACKISH_BELOW for triple in triples for channel in triple))

# ============================================================================================
# LibreOffice: registrymodifications.xcu

OOR = "{http://openoffice.org/2001/registry}"
# Enough for any real profile; a bigger file is not a LibreOffice settings file.
XCU_MAX_BYTES = 64 * 1024 * 1024


def _parse_xml_safely(path: str | None) -> ET.Element | None:
    """Root of a local XML file, or None. Documents with a DTD are refused: without one there are no
    entity declarations, so neither external entities nor entity expansion can happen."""
    if not path or not Path(path).is_file():
        return None
    try:
        data = Path(path).read_bytes()[: XCU_MAX_BYTES + 1]
    except OSError:
        return None
    if len(data) > XCU_MAX_BYTES or re.search(rb"<!DOCTYPE|<!ENTITY", data, re.I):
        return None
    try:
        return ET.fromstring(data)
    except ET.ParseError:
        return None


def _items(root: ET.Element, path: str) -> list[ET.Element]:
    """``<item oor:path=path>`` elements anywhere in the document, in document order."""
    return [item for item in root.iter("item") if item.get(f"{OOR}path") == path]


def _props(element: ET.Element, name: str, direct: bool = False) -> list[ET.Element]:
    """``<prop oor:name=name>`` children (``direct``) or descendants of ``element``."""
    found = element.findall("prop") if direct else [p for p in element.iter("prop") if p is not element]
    return [prop for prop in found if prop.get(f"{OOR}name") == name]


@metric("find_default_font")
def find_default_font(result: str | None, rules: Any) -> float:
    """1 when LibreOffice Writer's default font (DefaultFont ``Standard``) is ``rules["font_name"]``.

    result = path of registrymodifications.xcu (getter ``libreoffice_config`` / ``vm_file``). As in
    OSWorld the last ``<value>`` of a ``Standard`` prop under a DefaultFont item counts, compared
    exactly (no trimming). ``rules["font_type"]`` (ours) picks another DefaultFont entry.
    Never changed, or an unreadable file = 0.
    """
    expected = rule_value(rules, "font_name", "find_default_font")
    font_type = rule_value(rules, "font_type", "find_default_font", default="Standard")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    font = None
    for item in _items(root, "/org.openoffice.Office.Writer/DefaultFont"):
        for prop in _props(item, font_type):
            for value in prop.findall("value"):
                font = value.text
    return float(font is not None and font == expected)


def _locale_values(root: ET.Element, prop_name: str) -> list[ET.Element]:
    """``<value>`` children of ``prop_name`` props directly under items whose path ends in ``L10N``."""
    return [value for item in root.iter("item") if item.get(f"{OOR}path", "").endswith("L10N")
            for prop in _props(item, prop_name, direct=True) for value in prop.findall("value")]


@metric("check_libre_locale")
def check_libre_locale(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's locale setting matches a ``rules["locale_set"]`` pattern (case-sensitive
    fnmatch globs such as ``"de-*"``).

    result = path of registrymodifications.xcu. As in OSWorld the first ``ooSetupSystemLocale``
    value of an ``…L10N`` item is the locale, else the first ``ooLocale`` one; neither, or an empty
    value, scores 0.
    """
    patterns = rule_value(rules, "locale_set", "check_libre_locale")
    if not isinstance(patterns, (list, str)) or not all(isinstance(p, str) for p in patterns):
        raise UserError(f"metric 'check_libre_locale': locale_set must be a list of patterns, got {patterns!r}")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    values = _locale_values(root, "ooSetupSystemLocale") or _locale_values(root, "ooLocale")
    locale = values[0].text if values else None
    if locale is None:
        return 0.0
    return float(any(fnmatch.fnmatchcase(locale, pattern) for pattern in patterns))


@metric("check_auto_saving_time")
def check_auto_saving_time(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's autosave interval (``/org.openoffice.Office.Common/Save/Document``
    ``AutoSaveTimeIntervall``, minutes) equals ``rules["minutes"]``.

    result = path of registrymodifications.xcu (as OSWorld reads it for Impress). As in OSWorld the
    last such item counts, its value must be an integer (spaces allowed) equal to the rule value as
    Python compares them (``"3"`` is not 3); unset, empty, not a number or no file scores 0.
    """
    minutes = rule_value(rules, "minutes", "check_auto_saving_time")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    interval = None
    for item in _items(root, "/org.openoffice.Office.Common/Save/Document"):
        props = _props(item, "AutoSaveTimeIntervall")
        if props:
            value = props[0].find(".//value")
            if value is None:
                return 0.0  # OSWorld raised here
            interval = value.text
    if interval is None:
        return 0.0
    try:
        return float(int(interval) == minutes)
    except ValueError:
        return 0.0


@metric("check_presenter_console_disable")
def check_presenter_console_disable(result: str | None) -> float:
    """1 when Impress's presenter console is switched off: the first ``EnablePresenterScreen`` prop of
    ``/org.openoffice.Office.Impress/Misc/Start`` has the value ``false`` (any case, not trimmed),
    as OSWorld reads it. Unset (LibreOffice's default: on), empty or no file scores 0.

    result = path of registrymodifications.xcu.
    """
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    props = [prop for item in _items(root, "/org.openoffice.Office.Impress/Misc/Start")
             for prop in _props(item, "EnablePresenterScreen", direct=True)]
    if not props:
        return 0.0
    value = props[0].find("value")
    text = value.text if value is not None else None
    return float(text is not None and text.lower() == "false")

# ============================================================================================
# VS Code: settings.json / keybindings.json are JSON with comments (JSONC)

_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_JSONC_COMMENT = re.compile(_JSON_STRING + r"|//[^\n]*|/\*.*?\*/", re.S)
_JSONC_TRAILING_COMMA = re.compile(_JSON_STRING + r"|,(?=\s*[}\]])")


def _keep_strings(match: re.Match[str]) -> str:
    token = match.group(0)
    return token if token.startswith('"') else " "  # a space, so [1/**/2] cannot become [12]


def loads_jsonc(text: str) -> Any:
    """Parse JSON that may contain ``//`` and ``/* */`` comments and trailing commas (as VS Code allows).

    Comments, then trailing commas, are dropped outside strings; ValueError if the rest is not JSON.
    """
    without_comments = _JSONC_COMMENT.sub(_keep_strings, text.lstrip("\ufeff"))
    return json.loads(_JSONC_TRAILING_COMMA.sub(_keep_strings, without_comments))


_UNREADABLE = object()


def _load_jsonc(text: str | None) -> Any:
    """Parsed JSONC, or ``_UNREADABLE``."""
    if text is None:
        return _UNREADABLE
    try:
        return loads_jsonc(text)
    except (ValueError, RecursionError):
        return _UNREADABLE


@metric("check_json_settings")
def check_json_settings(result: str | None, rules: Any) -> float:
    """1 when every top-level setting in ``rules["expected"]`` (a dict) is in the settings file with
    an equal value (Python equality, as OSWorld: ``1 == true``, nested objects compared whole).

    result = path of a VS Code-style settings.json (UTF-8). OSWorld parsed it as strict JSON, so a
    file with comments or a trailing comma (which VS Code itself writes and reads) scored 0 there;
    here they are tolerated, the one deliberate difference.
    """
    expected = rule_value(rules, "expected", "check_json_settings")
    if not isinstance(expected, dict):
        raise UserError(f"metric 'check_json_settings': 'expected' must be a mapping of settings, got {expected!r}")
    data = _load_jsonc(read_text_strict(result))
    if not isinstance(data, dict):
        return 0.0
    return float(all(key in data and data[key] == value for key, value in expected.items()))


@metric("check_json_keybindings")
def check_json_keybindings(result: str | None, rules: Any) -> float:
    """1 when ``rules["expected"]`` (one binding ``{key, command[, when, args]}``) is an entry of the
    keybindings file, compared as OSWorld does: the same fields with equal values (key chords
    exactly, case included).

    result = path of a VS Code keybindings.json, a JSON list. As in OSWorld the file is read whole,
    or else without its first line (VS Code's ``// Place your key bindings…`` header); comments and
    trailing commas elsewhere are tolerated, which OSWorld's strict JSON reading did not.
    """
    expected = rule_value(rules, "expected", "check_json_keybindings")
    text = read_text_strict(result)
    if text is None:
        return 0.0
    data = _load_jsonc(text)
    if not isinstance(data, list):
        data = _load_jsonc(text.split("\n", 1)[1] if "\n" in text else "")
    if not isinstance(data, list):
        return 0.0
    return float(expected in data)

# ============================================================================================
# Chromium profile: Bookmarks roots, History sqlite, Preferences font sizes


def _children(node: Any) -> list[dict[str, Any]]:
    children = node.get("children") if isinstance(node, dict) else None
    return [c for c in children if isinstance(c, dict)] if isinstance(children, list) else []


def _string_list(rules: dict[str, Any], key: str, metric_name: str) -> list[Any]:
    value = rule_value(rules, key, metric_name)
    if not isinstance(value, list):
        raise UserError(f"metric {metric_name!r}: {key!r} must be a list, got {value!r}")
    return value


def _covers(choices: list[list[str]], urls: set[str]) -> bool:
    """Whether one URL can be picked from each list so that the picks are exactly ``urls``.

    Each list may only pick a URL of ``urls``; every URL needs a list of its own that allows it
    (a matching), the other lists then pick any allowed URL.
    """
    allowed = [set(choice) & urls for choice in choices]
    if any(not a for a in allowed):
        return False
    owner: dict[int, str] = {}  # list index -> the URL it is reserved for

    def place(url: str, seen: set[int]) -> bool:
        for i, a in enumerate(allowed):
            if url in a and i not in seen:
                seen.add(i)
                if i not in owner or place(owner[i], seen):
                    owner[i] = url
                    return True
        return False

    return all(place(url, set()) for url in urls)


@metric("is_expected_bookmarks")
def is_expected_bookmarks(result: Any, rules: Any) -> float:
    """1 when the bookmark bar holds the expected folders / URLs, as OSWorld checks them.

    result = the Bookmarks ``roots`` object (getter ``bookmarks``).
    ``rules["type"]``:

    - ``bookmark_bar_folders_names``: the set of the bar's folder names is the set ``names``;
    - ``bookmark_bar_websites_urls``: the set of the bar's URL bookmarks is the set ``urls``
      (URLs compared exactly: ``https://a.com`` is not ``https://a.com/``);
    - ``liked_authors_websites_urls``: the bar's folder "Liked Authors" (``folder``, ours) holds a
      set of URLs that one pick from each ``urls`` entry (a URL or a list of acceptable URLs) makes
      exactly; duplicates count once.

    ``rules["allow_extra"]: true`` (ours, for the first two types) lets other bookmarks sit on the
    bar. An empty result or a bookmark without its type/name/url scores 0.
    """
    kind = rule_value(rules, "type", "is_expected_bookmarks")
    if kind not in ("bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls"):
        raise UserError(f"metric 'is_expected_bookmarks': unknown type {kind!r}")
    key = "names" if kind == "bookmark_bar_folders_names" else "urls"
    wanted = _string_list(rules, key, "is_expected_bookmarks")
    allow_extra = bool(rules.get("allow_extra", False))
    if not result or not isinstance(result, dict):
        return 0.0
    try:
        bar = result["bookmark_bar"]["children"]
        if kind != "liked_authors_websites_urls":
            field, node_type = ("name", "folder") if kind == "bookmark_bar_folders_names" else ("url", "url")
            found = {node[field] for node in bar if node["type"] == node_type}
            expected = set(wanted)
            return float(expected <= found if allow_extra else found == expected)
        folder_name = rules.get("folder", "Liked Authors")
        folder = next((node for node in bar if node["type"] == "folder" and node["name"] == folder_name), None)
        if folder is None:
            return 0.0
        urls = {node["url"] for node in folder["children"] if node["type"] == "url"}
    except (KeyError, TypeError):
        return 0.0
    choices = [entry if isinstance(entry, list) else [entry] for entry in wanted]
    return float(_covers(choices, urls))


def _history_urls(result: Any) -> list[Any] | None:
    """First columns of the History rows (OSWorld's getter gives rows), or the ``url`` column of a
    History database copy (our getter gives its path, opened read-only); None if unreadable."""
    if isinstance(result, (list, tuple)):
        try:
            return [row[0] for row in result]
        except (TypeError, IndexError, KeyError):
            return None
    if not isinstance(result, (str, os.PathLike)) or not Path(result).is_file():
        return None
    uri = Path(result).resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            return [row[0] for row in connection.execute("SELECT url FROM urls")]
        finally:
            connection.close()
    except sqlite3.Error:
        return None


@metric("check_history_deleted")
def check_history_deleted(result: Any, rules: Any) -> float:
    """1 when no browsing-history URL contains any of ``rules["keywords"]`` (``rules["type"]: keywords``),
    case-sensitively as in OSWorld.

    result = rows of getter ``history`` (URL first) or the path of a History sqlite copy.
    """
    kind = rule_value(rules, "type", "check_history_deleted")
    if kind != "keywords":
        raise UserError(f"metric 'check_history_deleted': type must be 'keywords', got {kind!r}")
    keywords = _string_list(rules, "keywords", "check_history_deleted")
    urls = _history_urls(result)
    if urls is None:
        return 0.0
    try:
        return float(not any(keyword in url for keyword in keywords for url in urls))
    except TypeError:
        return 0.0


@metric("check_font_size")
def check_font_size(result: Any, rules: Any) -> float:
    """1 when Chromium's default font size fits the rule, as OSWorld checks it.

    result = the ``webkit.webprefs`` font-size dict of getter ``chrome_font_size`` (or a whole
    Preferences dict). ``rules["type"]``: ``value`` (equals ``value``) or ``range``
    (``min < size < max``, strict). ``rules["key"]`` (ours) picks another size
    (``minimum_font_size``, ``default_fixed_font_size``). No ``default_font_size`` in the dict: 0.
    """
    kind = rule_value(rules, "type", "check_font_size")
    key = rule_value(rules, "key", "check_font_size", default="default_font_size")
    if kind == "value":
        bounds = [rule_value(rules, "value", "check_font_size")]
    elif kind == "range":
        bounds = [rule_value(rules, "min", "check_font_size"), rule_value(rules, "max", "check_font_size")]
    else:
        raise UserError(f"metric 'check_font_size': type must be 'value' or 'range', got {kind!r}")
    if not isinstance(result, dict):
        return 0.0
    sizes = _walk_dicts(result, ["webkit", "webprefs"]) if "webkit" in result else result
    if not isinstance(sizes, dict) or key not in sizes:
        return 0.0
    size = sizes[key]
    try:
        return float(bool(size == bounds[0] if kind == "value" else bounds[0] < size < bounds[1]))
    except TypeError:
        return 0.0


def _walk_dicts(data: Any, keys: list[str]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data

# ============================================================================================
# Thunderbird: prefs.js, msgFilterRules.dat and mbox folder files of a profile

# A prefs.js line as OSWorld reads it: exactly one space after the name's comma, the value a JSON literal.
_USER_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<value>.+)\);$')


def thunderbird_prefs(text: str) -> list[tuple[str, Any]] | None:
    """``(name, value)`` of every ``user_pref("name", value);`` line of a prefs.js, in file order.

    Names are kept as written; values are decoded as JSON (``true`` is True, strings unescaped).
    None when a value is not JSON (OSWorld raised on such a file, which scores 0).
    """
    prefs = []
    for line in _LINE.findall(text):
        match = _USER_PREF.match(line.strip())
        if match:
            try:
                prefs.append((match.group("key"), json.loads(match.group("value"))))
            except ValueError:
                return None
    return prefs


def _pref_rules(rules: Any, key: str) -> dict[str, dict[str, Any]]:
    value = rules.get(key, {}) if isinstance(rules, dict) else None
    if not isinstance(value, dict) or not all(isinstance(r, dict) for r in value.values()):
        raise UserError(f"metric 'check_thunderbird_prefs': {key!r} must map pref names to {{method, ref}} rules, got {value!r}")
    return value


@metric("check_thunderbird_prefs")
def check_thunderbird_prefs(result: str | None, rules: Any) -> float:
    """1 when every pref of ``rules["expect"]`` is set in prefs.js to a value its ``{method, ref}`` rule
    accepts, and no pref of ``rules["unexpect"]`` has a value its rule accepts.

    result = path of a profile's prefs.js (Thunderbird writes it on exit; close it first). Read as
    OSWorld reads it: ``user_pref("name", value);`` lines, the last line for a pref deciding an
    ``expect``; a value that is not a JSON literal anywhere in the file scores 0. A pref Thunderbird
    left at its default is not in the file: an ``expect`` on it scores 0.
    """
    expect, unexpect = _pref_rules(rules, "expect"), _pref_rules(rules, "unexpect")
    if not expect and not unexpect:
        raise UserError("metric 'check_thunderbird_prefs' needs 'expect' or 'unexpect' rules")
    text = read_text_strict(result)
    prefs = thunderbird_prefs(text) if text is not None else None
    if prefs is None:
        return 0.0
    met = dict.fromkeys(expect, False)
    for name, value in prefs:
        if name in expect:
            met[name] = match_value(value, expect[name])
        elif name in unexpect and match_value(value, unexpect[name]):
            return 0.0
    return float(all(met.values()))


# One term of a filter condition, as OSWorld splits it: ``AND (subject,contains,x)`` or ``ALL``.
_FILTER_TERM = re.compile(r'\b(?:AND|OR) \([\w ]+,[\w \']+,(?:"(?:[^"]|")+"|[^)]+)\)|\bALL\b')
_FILTER_FIELDS = ("name", "enabled", "type", "action", "actionValue", "condition")


def _filter_value(line: str, field: str) -> str:
    """The quoted value of a ``field="…"`` line (its closing quote and line end cut off as OSWorld
    does: the last two characters), with ``\\"`` and ``\\\\`` unescaped."""
    return line[len(field) + 2:-2].replace('\\"', '"').replace("\\\\", "\\")


def thunderbird_filters(text: str) -> list[dict[str, Any]] | None:
    """The filters of a msgFilterRules.dat as OSWorld reads them: ``{name, enabled, type, action,
    actionValue, condition: [terms]}``, a filter counted once its ``condition`` line is read.

    A filter's later ``action``/``actionValue`` lines overwrite earlier ones (the last action
    counts). None when a field line comes before any ``name`` (OSWorld raised).
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in _LINE.findall(text):
        field = next((f for f in _FILTER_FIELDS if line.startswith(f + "=")), None)
        if field is None:
            continue
        value = _filter_value(line, field)
        if field == "name":
            current = {"name": value}
            continue
        if current is None:
            return None
        if field == "condition":
            current["condition"] = _FILTER_TERM.findall(value)
            filters.append(current)
        else:
            current[field] = value
    return filters


def _record_list(rules: Any, key: str) -> list[dict[str, Any]]:
    value = rules.get(key, []) if isinstance(rules, dict) else None
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise UserError(f"metric 'check_thunderbird_filter': {key!r} must be a list of filter records, got {value!r}")
    return value


def _fits(pattern: dict[str, Any], record: dict[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in pattern.items())


@metric("check_thunderbird_filter")
def check_thunderbird_filter(result: str | None, rules: Any) -> float:
    """1 when every record of ``rules["expect"]`` fits some filter and no filter fits a record of
    ``rules["unexpect"]``.

    result = path of an account's msgFilterRules.dat. A record such as ``{enabled: "yes", action:
    "Move to folder", actionValue: "mailbox://…", condition: ["AND (subject,contains,x)"]}`` fits a
    filter when each of its fields equals the filter's (``condition`` as the list of terms). As in
    OSWorld a filter with several actions shows only its last one.
    """
    expect, unexpect = _record_list(rules, "expect"), _record_list(rules, "unexpect")
    text = read_text_strict(result)
    filters = thunderbird_filters(text) if text is not None else None
    if filters is None:
        return 0.0
    if any(_fits(pattern, flt) for pattern in unexpect for flt in filters):
        return 0.0
    return float(all(any(_fits(pattern, flt) for flt in filters) for pattern in expect))

# An mbox "From " line starts the file or follows a blank line; other "From " lines are body text.
_MBOX_SEPARATOR = re.compile(r"(?:\A|(?<=\n\n))From [^\n]*(?:\n|\Z)")
_MOZILLA_STATUS = re.compile(r"^X-Mozilla-Status: *([0-9A-Fa-f]{1,4})\s*$", re.M)
MSG_FLAG_EXPUNGED = 0x0008


def _mbox_messages(path: str, ignore_status: bool, ignore_keys: bool, remove_deleted: bool,
                   remove_duplicate: bool) -> list[str] | None:
    """The normalised messages of an mbox file (or of a single .eml), sorted; None if unreadable."""
    text = _text_or_none(path)
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    # A file that does not start with a "From " line is one message (.eml), whatever its body holds.
    parts = _MBOX_SEPARATOR.split(text) if text.startswith("From ") else [text]
    messages = []
    for message in parts:
        if not message.strip():
            continue
        status = _MOZILLA_STATUS.search(message)
        if remove_deleted and status and int(status.group(1), 16) & MSG_FLAG_EXPUNGED:
            continue
        if ignore_status:
            message = re.sub(r"^X-Mozilla-Status2?:.*\n?", "", message, flags=re.M)
        if ignore_keys:
            message = re.sub(r"^X-Mozilla-Keys:.*\n?", "", message, flags=re.M)
        messages.append(message.strip())
    return sorted(set(messages) if remove_duplicate else messages)


@metric("check_thunderbird_folder")
def check_thunderbird_folder(result: Any, expected: Any, ignore_status: bool = False, ignore_keys: bool = False,
                             remove_deleted: bool = True, remove_duplicate: bool = True) -> float:
    """1 when each mail folder file holds the same messages as its gold file.

    result, expected: local paths of Thunderbird mbox folder files (``Mail/Local Folders/Bills``) or of
    single messages (.eml), or parallel lists of them. Messages compare as text, in any order, with
    the mbox ``From -`` separator lines left out (Thunderbird stamps them with the time it stored the
    message). ``remove_deleted`` (default on) skips messages whose X-Mozilla-Status has the expunged
    flag (a message moved away stays in its old folder marked so until the folder is compacted);
    ``remove_duplicate`` (on) compares sets; ``ignore_status`` / ``ignore_keys`` drop the
    X-Mozilla-Status(2) / X-Mozilla-Keys headers first (read/starred state, tags).

    OSWorld's version skips every non-empty message while splitting, so it compares nothing and
    scores 1 whenever the files exist; this one compares the messages, as its options describe.
    """
    results, golds = (result, expected) if isinstance(expected, list) else ([result], [expected])
    if not isinstance(results, list) or len(results) != len(golds):
        raise UserError(f"metric 'check_thunderbird_folder': result and expected must be paths or equally long lists, "
                        f"got {result!r} and {expected!r}")
    options = (bool(ignore_status), bool(ignore_keys), bool(remove_deleted), bool(remove_duplicate))
    for pred, gold in zip(results, golds):
        mine = _mbox_messages(pred, *options) if pred else None
        theirs = _mbox_messages(gold, *options) if gold else None
        if mine is None or theirs is None or mine != theirs:
            return 0.0
    return 1.0


# ============================================================================================
# directory listing


@metric("check_moved_jpgs")
def check_moved_jpgs(result: Any, rules: Any) -> float:
    """1 when the directory holds exactly the files ``rules["expected"]`` (a list of names).

    result = entry names (our getter ``list_directory``) or OSWorld's tree ``{"children": [{"name"}…]}``
    (a tree without ``children`` or a child without ``name`` scores 0, as OSWorld raised).
    Compared as sets, and the counts must agree.
    """
    expected = _string_list(rules, "expected", "check_moved_jpgs")
    if isinstance(result, dict):
        try:
            result = [child["name"] for child in result["children"]]
        except (KeyError, TypeError):
            return 0.0
    if not isinstance(result, list):
        return 0.0
    names = [str(name) for name in result]
    return float(len(names) == len(expected) and set(names) == {str(e) for e in expected})
