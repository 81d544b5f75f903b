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
import math
import os
import posixpath
import re
import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcpworld.errors import UserError
from mcpworld.evaluation.matchers import match_value
from mcpworld.evaluation.metrics.general import _read_text, rule_value
from mcpworld.evaluation.registry import metric


def _text_or_none(path: str | None) -> str | None:
    """Text of a local file; None when absent or unreadable (scored 0 by the caller)."""
    try:
        return _read_text(path)
    except OSError:
        return None


def _same_value(actual: Any, expected: Any) -> bool:
    """Settings comparison: numbers numerically, booleans as 0/1, everything else as stripped text."""
    if isinstance(expected, bool):
        expected = int(expected)
    if isinstance(actual, bool):
        actual = int(actual)
    try:
        a, e = float(str(actual).strip()), float(str(expected).strip())
    except ValueError:
        return str(actual).strip() == str(expected).strip()
    return a == e or (math.isnan(a) and math.isnan(e))


# ============================================================================================
# GIMP: gimprc is a list of S-expressions such as (theme "Light") or (default-view (show-menubar no))

_GIMPRC_TOKEN = re.compile(r'\s+|#[^\n]*|\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"#]+', re.S)


def parse_sexprs(text: str) -> list[Any]:
    """Top-level forms of a gimprc as nested lists of tokens (strings keep their quotes).

    ValueError on unbalanced parentheses or an unterminated string.
    """
    stack: list[list[Any]] = [[]]
    pos = 0
    while pos < len(text):
        match = _GIMPRC_TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"cannot parse gimprc at offset {pos}")
        token, pos = match.group(0), match.end()
        if token.isspace() or token.startswith("#"):
            continue
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')' in gimprc")
            form = stack.pop()
            stack[-1].append(form)
        else:
            stack[-1].append(token)
    if len(stack) != 1:
        raise ValueError("unbalanced '(' in gimprc")
    return stack[0]


def _render(value: Any) -> str:
    return "(" + " ".join(_render(v) for v in value) + ")" if isinstance(value, list) else value


def _gimp_lookup(forms: list[Any], key: list[str]) -> str | None:
    """The value (rest of the form, rendered) at the key path; the last occurrence wins."""
    found: str | None = None
    for form in forms:
        if isinstance(form, list) and form and form[0] == key[0]:
            rest = form[1:]
            if len(key) == 1:
                found = " ".join(_render(v) for v in rest)
            else:
                deeper = _gimp_lookup(rest, key[1:])
                found = deeper if deeper is not None else found
    return found


def _unquote(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


@metric("check_config_status")
def check_config_status(result: str | None, rules: Any) -> float:
    """1 when the gimprc setting ``rules["key"]`` has the value ``rules["value"]``.

    result = path of a gimprc (getter ``gimp_config_file``). ``key`` is a name (``"theme"``) or a
    path into nested forms (``["default-view", "show-menubar"]``). Values compare with surrounding
    quotes ignored (``"\\"Light\\""`` and ``"Light"`` both match ``(theme "Light")``); booleans as
    yes/no. An absent key scores 0 unless ``rules["default"]`` gives GIMP's default to compare.
    """
    key = rule_value(rules, "key", "check_config_status")
    expected = rule_value(rules, "value", "check_config_status")
    key_path = [key] if isinstance(key, str) else key
    if not isinstance(key_path, list) or not key_path or not all(isinstance(k, str) for k in key_path):
        raise UserError(f"metric 'check_config_status': 'key' must be a name or a list of names, got {key!r}")
    text = _text_or_none(result)
    if text is None:
        return 0.0
    try:
        actual = _gimp_lookup(parse_sexprs(text), key_path)
    except (ValueError, RecursionError):
        return 0.0
    if actual is None:
        actual = rules.get("default")
        if actual is None:
            return 0.0
    if isinstance(expected, bool):
        expected = "yes" if expected else "no"
    if isinstance(actual, bool):
        actual = "yes" if actual else "no"
    return float(_same_value(_unquote(str(actual)), _unquote(str(expected))))


# ============================================================================================
# VLC: vlcrc is INI-like; "key=value" lines under [module] sections, defaults commented out with #


def parse_vlcrc(text: str) -> dict[str, str]:
    """Active ``key=value`` settings of a vlcrc (comments and section headers skipped; last one wins)."""
    settings: dict[str, str] = {}
    for line in text.lstrip("\ufeff").splitlines():
        line = line.strip()
        if not line or line[0] in "#;[":
            continue
        key, sep, value = line.partition("=")
        if sep:
            settings[key.strip()] = value.strip()
    return settings


@metric("is_vlc_playing")
def is_vlc_playing(result: str | None, rules: Any = None, **unknown: Any) -> float:
    """1 when VLC's ``status.xml`` (the ``vlc_playing_info`` getter) says ``playing`` and the media
    fits the rule: ``{type: file_name, file_name}`` or ``{type: url, url}``, matched as the end of the
    status's meta ``filename`` / ``url`` (as OSWorld does). Not playing, or no status: 0."""
    if not isinstance(rules, dict) or rules.get("type") not in ("file_name", "url") or rules["type"] not in rules:
        raise UserError("metric 'is_vlc_playing' needs rules {type: file_name, file_name: …} or "
                        f"{{type: url, url: …}}, got {rules!r}")
    text = _text_or_none(result)
    if not text:
        return 0.0
    try:
        tree = ET.fromstring(text)
    except ET.ParseError:
        return 0.0
    if (tree.findtext("state") or "").strip() != "playing":
        return 0.0
    field = "filename" if rules["type"] == "file_name" else "url"
    value = tree.findtext(f"information/category[@name='meta']/info[@name='{field}']")
    return float(bool(value) and value.endswith(str(rules[rules["type"]])))


def _vlc_settings(result: str | None) -> dict[str, str] | None:
    text = _text_or_none(result)
    return None if text is None else parse_vlcrc(text)


def _vlc_expected(rules: Any, metric_name: str, keys: Iterable[str]) -> Any:
    """The first of ``keys`` present in the rules (anchor names first, then plain ``expected``)."""
    names = [*keys, "expected"]
    if isinstance(rules, dict):
        for name in names:
            if name in rules:
                return rules[name]
    raise UserError(f"metric {metric_name!r} needs one of {names} in its rules, got {rules!r}")


def _vlc_setting_is(result: str | None, rules: Any, metric_name: str, setting: str, default: Any) -> float:
    """1 when vlcrc ``setting`` (``default`` when VLC left it commented out) equals the expected value."""
    expected = _vlc_expected(rules, metric_name, ["expected_" + setting.replace("-", "_")])
    settings = _vlc_settings(result)
    if settings is None:
        return 0.0
    return float(_same_value(settings.get(setting, default), expected))


def _norm_path(path: str) -> str:
    path = path.strip()
    path = path.removeprefix("file://")
    if path == "~" or path.startswith("~/"):
        path = "/home/user" + path[1:]
    return posixpath.normpath(path) if path else path


@metric("is_vlc_recordings_folder")
def is_vlc_recordings_folder(result: str | None, rules: Any) -> float:
    """1 when VLC's recordings folder (vlcrc ``input-record-path``) is ``rules["recording_file_path"]``.

    result = vlcrc path (getter ``vlc_config``, which writes the episode home as /home/user).
    Paths compare normalised (``~`` = /home/user, trailing slashes and ``file://`` ignored).
    Unset (VLC's default) scores 0.
    """
    expected = rule_value(rules, "recording_file_path", "is_vlc_recordings_folder")
    settings = _vlc_settings(result)
    if settings is None:
        return 0.0
    actual = settings.get("input-record-path", "")
    return float(bool(actual) and _norm_path(actual) == _norm_path(str(expected)))


@metric("check_qt_bgcone")
def check_qt_bgcone(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-bgcone`` (the cone shown behind audio; default 1) is ``rules["expected_qt_bgcone"]``."""
    return _vlc_setting_is(result, rules, "check_qt_bgcone", "qt-bgcone", 1)


@metric("check_qt_max_volume")
def check_qt_max_volume(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-max-volume`` (default 125) is ``rules["expected_qt_max_volume"]``."""
    return _vlc_setting_is(result, rules, "check_qt_max_volume", "qt-max-volume", 125)


@metric("check_qt_minimal_view")
def check_qt_minimal_view(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-minimal-view`` (default 0) is ``rules["expected_qt_minimal_view"]``."""
    return _vlc_setting_is(result, rules, "check_qt_minimal_view", "qt-minimal-view", 0)


@metric("check_qt_video_resize")
def check_qt_video_resize(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``qt-video-autoresize`` (default 1) is ``rules["expected_qt_video_autoresize"]``.

    ``expected_qt_video_resize`` or ``expected`` are accepted as the rule key too.
    """
    expected = _vlc_expected(rules, "check_qt_video_resize", ["expected_qt_video_autoresize", "expected_qt_video_resize"])
    return _vlc_setting_is(result, {"expected": expected}, "check_qt_video_resize", "qt-video-autoresize", 1)


@metric("check_one_instance_when_started_from_file")
def check_one_instance_when_started_from_file(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``one-instance-when-started-from-file`` (default 1) is the expected 0/1.

    Rule key ``expected_one_instance_when_started_from_file`` (or ``expected``).
    """
    return _vlc_setting_is(result, rules, "check_one_instance_when_started_from_file",
                           "one-instance-when-started-from-file", 1)


@metric("check_play_and_exit")
def check_play_and_exit(result: str | None, rules: Any) -> float:
    """1 when vlcrc ``play-and-exit`` (default 0) is ``rules["expected_play_and_exit"]``."""
    return _vlc_setting_is(result, rules, "check_play_and_exit", "play-and-exit", 0)


@metric("check_global_key_play_pause")
def check_global_key_play_pause(result: str | None, rules: Any) -> float:
    """1 when VLC's global play/pause hotkey (vlcrc ``global-key-play-pause``) is as expected.

    ``rules["expected_global_key_play_pause"]``: 1/true = some global key is set, 0/false = none
    (VLC's default); a string = exactly that key (case-insensitive, e.g. ``"Ctrl+Space"``).
    """
    expected = _vlc_expected(rules, "check_global_key_play_pause", ["expected_global_key_play_pause"])
    settings = _vlc_settings(result)
    if settings is None:
        return 0.0
    actual = settings.get("global-key-play-pause", "")
    if isinstance(expected, str) and not expected.strip().isdigit():
        return float(actual.lower() == expected.strip().lower())
    return float(_same_value(int(bool(actual)), expected))


VLC_SLIDER_DEFAULT = "153;210;153;20;210;20;255;199;15;245;39;29"


def _slider_colours(value: str) -> list[tuple[int, ...]] | None:
    try:
        numbers = [int(part) for part in value.split(";") if part.strip()]
    except ValueError:
        return None
    if not numbers or len(numbers) % 3:
        return None
    return [tuple(numbers[i:i + 3]) for i in range(0, len(numbers), 3)]


@metric("check_qt_slider_colours")
def check_qt_slider_colours(result: str | None, rules: Any) -> float:
    """1 when VLC's volume-slider colours (vlcrc ``qt-slider-colours``) fit the rule.

    ``rules["type"]``: ``match`` (the ``r;g;b;…`` string equals ``expected_qt_slider_colours``) or
    ``blackish`` (every colour has all channels below ``threshold``, default 100). Unset = VLC's
    default green-to-red palette.
    """
    kind = rule_value(rules, "type", "check_qt_slider_colours")
    if kind == "match":
        expected = _vlc_expected(rules, "check_qt_slider_colours", ["expected_qt_slider_colours"])
    elif kind == "blackish":
        threshold = rules.get("threshold", 100)
        if not _is_number(threshold):
            raise UserError(f"metric 'check_qt_slider_colours': threshold must be a number, got {threshold!r}")
    else:
        raise UserError(f"metric 'check_qt_slider_colours': type must be 'match' or 'blackish', got {kind!r}")
    settings = _vlc_settings(result)
    if settings is None:
        return 0.0
    colours = _slider_colours(settings.get("qt-slider-colours", VLC_SLIDER_DEFAULT))
    if colours is None:
        return 0.0
    if kind == "match":
        return float(colours == _slider_colours(str(expected)))
    return float(all(channel < threshold for colour in colours for channel in colour))


# ============================================================================================
# LibreOffice: registrymodifications.xcu

OOR = "{http://openoffice.org/2001/registry}"
XSI_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"
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


def _xcu_value(prop: ET.Element) -> Any:
    """A prop's value: text, list of ``<it>`` items, or None (nil / no value)."""
    values = prop.findall("value")
    if not values:
        return None
    value = next((v for v in values if not v.attrib), values[0])  # the unlocalised one if any
    if value.get(XSI_NIL) == "true":
        return None
    items = value.findall("it")
    return [it.text or "" for it in items] if items else (value.text or "")


def xcu_settings(path: str | None) -> dict[tuple[str, str], Any] | None:
    """``{(node path, prop name): value}`` from a registrymodifications.xcu, or None if unreadable.

    ``<node>`` children extend the item's path (``/org.openoffice.Office.Common/Foo/Bar``).
    A later entry for the same setting wins, as when LibreOffice reads the file.
    """
    root = _parse_xml_safely(path)
    if root is None:
        return None
    settings: dict[tuple[str, str], Any] = {}

    def visit(element: ET.Element, node_path: str) -> None:
        for child in element:
            if child.tag == "prop":
                settings[(node_path, child.get(f"{OOR}name", ""))] = _xcu_value(child)
            elif child.tag == "node":
                visit(child, f"{node_path}/{child.get(f'{OOR}name', '')}")

    for item in root.iter("item"):
        visit(item, item.get(f"{OOR}path", ""))
    return settings


@metric("find_default_font")
def find_default_font(result: str | None, rules: Any) -> float:
    """1 when LibreOffice Writer's default font (``Standard`` by default) is ``rules["font_name"]``.

    result = path of registrymodifications.xcu (getter ``libreoffice_config``). ``rules["font_type"]``
    picks another DefaultFont entry (Heading, List, Caption, Index). Never changed = 0.
    """
    expected = rule_value(rules, "font_name", "find_default_font")
    font_type = rule_value(rules, "font_type", "find_default_font", default="Standard")
    settings = xcu_settings(result)
    if settings is None:
        return 0.0
    actual = settings.get(("/org.openoffice.Office.Writer/DefaultFont", font_type))
    return float(isinstance(actual, str) and actual.strip() == str(expected).strip())


@metric("check_libre_locale")
def check_libre_locale(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's locale setting (``ooSetupSystemLocale``) matches a ``rules["locale_set"]`` pattern.

    result = path of registrymodifications.xcu. Patterns are case-sensitive fnmatch globs
    (``"de-*"``). Never set ("Default") scores 0: the anchor fell back to the grading host's locale.
    """
    patterns = rule_value(rules, "locale_set", "check_libre_locale")
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise UserError(f"metric 'check_libre_locale': locale_set must be a list of patterns, got {patterns!r}")
    settings = xcu_settings(result)
    if settings is None:
        return 0.0
    locale = settings.get(("/org.openoffice.Setup/L10N", "ooSetupSystemLocale"))
    if not isinstance(locale, str) or not locale:
        return 0.0
    return float(any(fnmatch.fnmatchcase(locale, pattern) for pattern in patterns))


@metric("check_auto_saving_time")
def check_auto_saving_time(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's autosave interval (``/org.openoffice.Office.Common/Save/Document``
    ``AutoSaveTimeIntervall``, minutes) is ``rules["minutes"]``; unset or no file scores 0.

    result = path of registrymodifications.xcu (as OSWorld reads it for Impress).
    """
    minutes = rule_value(rules, "minutes", "check_auto_saving_time")
    settings = xcu_settings(result)
    if settings is None:
        return 0.0
    value = settings.get(("/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall"))
    try:
        return float(value is not None and int(value) == int(minutes))
    except (TypeError, ValueError):
        return 0.0


@metric("check_presenter_console_disable")
def check_presenter_console_disable(result: str | None) -> float:
    """1 when Impress's presenter console is switched off (``/org.openoffice.Office.Impress/Misc/Start``
    ``EnablePresenterScreen`` is false); unset (LibreOffice's default: on) or no file scores 0.

    result = path of registrymodifications.xcu.
    """
    settings = xcu_settings(result)
    if settings is None:
        return 0.0
    value = settings.get(("/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen"))
    return float(isinstance(value, str) and value.strip().lower() == "false")


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


def _load_jsonc_file(path: str | None) -> Any:
    """Parsed JSONC, or ``_UNREADABLE``."""
    text = _text_or_none(path)
    if text is None:
        return _UNREADABLE
    try:
        return loads_jsonc(text)
    except (ValueError, RecursionError):
        return _UNREADABLE


@metric("check_json_settings")
def check_json_settings(result: str | None, rules: Any) -> float:
    """1 when every top-level setting in ``rules["expected"]`` (a dict) is in the settings file with that value.

    result = path of a VS Code-style settings.json; comments and trailing commas are tolerated.
    """
    expected = rule_value(rules, "expected", "check_json_settings")
    if not isinstance(expected, dict):
        raise UserError(f"metric 'check_json_settings': 'expected' must be a mapping of settings, got {expected!r}")
    data = _load_jsonc_file(result)
    if not isinstance(data, dict):
        return 0.0
    return float(all(key in data and data[key] == value for key, value in expected.items()))


_MODIFIER_ORDER = {"ctrl": 0, "shift": 1, "alt": 2, "meta": 3, "cmd": 3, "win": 3}


def _normalise_chord(keys: Any) -> Any:
    """``"Shift+Ctrl+K  ctrl+c"`` → ``"ctrl+shift+k ctrl+c"``: lower case, modifiers in a fixed order."""
    if not isinstance(keys, str):
        return keys
    chords = []
    for chord in keys.lower().split():
        parts = [p for p in chord.split("+") if p]
        modifiers = sorted((p for p in parts[:-1] if p in _MODIFIER_ORDER), key=_MODIFIER_ORDER.__getitem__)
        others = [p for p in parts[:-1] if p not in _MODIFIER_ORDER]
        chords.append("+".join([*modifiers, *others, *parts[-1:]]))
    return " ".join(chords)


def _normalise_binding(binding: Any) -> Any:
    if not isinstance(binding, dict):
        return binding
    return {k: _normalise_chord(v) if k in ("key", "mac", "linux", "win") else v for k, v in binding.items()}


@metric("check_json_keybindings")
def check_json_keybindings(result: str | None, rules: Any) -> float:
    """1 when each expected key binding is an entry of the keybindings file.

    result = path of a VS Code keybindings.json (a JSON list; comments and trailing commas are
    tolerated). ``rules["expected"]`` is one binding ``{key, command[, when, args]}`` or a list.
    An entry matches when it has exactly the same fields; key chords compare case-insensitively
    with modifiers in any order.
    """
    expected = rule_value(rules, "expected", "check_json_keybindings")
    wanted = expected if isinstance(expected, list) else [expected]
    if not wanted or not all(isinstance(b, dict) for b in wanted):
        raise UserError(f"metric 'check_json_keybindings': 'expected' must be a binding object or a list of them, got {expected!r}")
    data = _load_jsonc_file(result)
    if not isinstance(data, list):
        return 0.0
    present = [_normalise_binding(entry) for entry in data]
    return float(all(_normalise_binding(binding) in present for binding in wanted))


# ============================================================================================
# Chromium profile: Bookmarks roots, History sqlite, Preferences font sizes


def _children(node: Any) -> list[dict[str, Any]]:
    children = node.get("children") if isinstance(node, dict) else None
    return [c for c in children if isinstance(c, dict)] if isinstance(children, list) else []


def _url_key(url: Any) -> str:
    """Chromium stores ``https://a.com`` as ``https://a.com/``; compare both the same."""
    text = str(url).strip()
    return text[:-1] if re.fullmatch(r"[a-zA-Z][\w+.-]*://[^/?#]+/", text) else text


def _assign(slots: list[set[str]], actual: list[str]) -> bool:
    """Whether each actual URL can take a distinct slot it is allowed in (and every slot is used)."""
    if len(slots) != len(actual):
        return False
    owner: dict[int, int] = {}  # slot index -> actual index

    def place(i: int, seen: set[int]) -> bool:
        for s, allowed in enumerate(slots):
            if actual[i] in allowed and s not in seen:
                seen.add(s)
                if s not in owner or place(owner[s], seen):
                    owner[s] = i
                    return True
        return False

    return all(place(i, set()) for i in range(len(actual)))


def _string_list(rules: dict[str, Any], key: str, metric_name: str) -> list[Any]:
    value = rule_value(rules, key, metric_name)
    if not isinstance(value, list):
        raise UserError(f"metric {metric_name!r}: {key!r} must be a list, got {value!r}")
    return value


def _same_items(actual: list[str], expected: list[str], allow_extra: bool) -> bool:
    return set(expected) <= set(actual) if allow_extra else set(actual) == set(expected)


@metric("is_expected_bookmarks")
def is_expected_bookmarks(result: Any, rules: Any) -> float:
    """1 when the bookmark bar holds the expected folders / URLs.

    result = the Bookmarks ``roots`` object (getter ``bookmarks``) or the whole Bookmarks JSON.
    ``rules["type"]``:

    - ``bookmark_bar_folders_names``: the bar's folder names equal ``names`` (as sets);
    - ``bookmark_bar_websites_urls``: the bar's URL bookmarks equal ``urls`` (as sets);
    - ``liked_authors_websites_urls``: the folder ``folder`` (default "Liked Authors") on the bar
      holds one URL per ``urls`` entry, an entry being a URL or a list of acceptable URLs.

    ``rules["allow_extra"]: true`` lets other bookmarks sit on the bar (the first two types);
    by default they fail it, as in the anchor. A bare domain with and without its trailing ``/``
    compare equal.
    """
    kind = rule_value(rules, "type", "is_expected_bookmarks")
    if kind not in ("bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls"):
        raise UserError(f"metric 'is_expected_bookmarks': unknown type {kind!r}")
    key = "names" if kind == "bookmark_bar_folders_names" else "urls"
    wanted = _string_list(rules, key, "is_expected_bookmarks")
    allow_extra = bool(rules.get("allow_extra", False))
    if not isinstance(result, dict):
        return 0.0
    roots = result.get("roots", result)
    bar = _children(roots.get("bookmark_bar") if isinstance(roots, dict) else None)
    if kind == "bookmark_bar_folders_names":
        names = [str(c.get("name")) for c in bar if c.get("type") == "folder"]
        return float(_same_items(names, [str(n) for n in wanted], allow_extra))
    if kind == "bookmark_bar_websites_urls":
        urls = [_url_key(c.get("url")) for c in bar if c.get("type") == "url"]
        return float(_same_items(urls, [_url_key(u) for u in wanted], allow_extra))
    folder_name = rules.get("folder", "Liked Authors")
    folder = next((c for c in bar if c.get("type") == "folder" and c.get("name") == folder_name), None)
    if folder is None:
        return 0.0
    urls = [_url_key(c.get("url")) for c in _children(folder) if c.get("type") == "url"]
    slots = [{_url_key(u) for u in (entry if isinstance(entry, list) else [entry])} for entry in wanted]
    return float(_assign(slots, urls))


def _history_urls(result: Any) -> list[str] | None:
    """URLs of a History database copy (path) or of already-read rows; None if unreadable."""
    if isinstance(result, (list, tuple)):
        urls = []
        for row in result:
            if isinstance(row, dict):
                urls.append(str(row.get("url", "")))
            elif isinstance(row, (list, tuple)) and row:
                urls.append(str(row[0]))
            else:
                urls.append(str(row))
        return urls
    if not isinstance(result, (str, os.PathLike)) or not Path(result).is_file():
        return None
    uri = Path(result).resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            return [str(row[0]) for row in connection.execute("SELECT url FROM urls")]
        finally:
            connection.close()
    except sqlite3.Error:
        return None


@metric("check_history_deleted")
def check_history_deleted(result: Any, rules: Any) -> float:
    """1 when no browsing-history URL contains any of ``rules["keywords"]`` (``rules["type"]: keywords``).

    result = path of a Chromium History sqlite copy (getter ``history``; opened read-only), or
    rows whose first column / ``url`` field is the URL. Keywords match case-insensitively.
    """
    kind = rule_value(rules, "type", "check_history_deleted", default="keywords")
    if kind != "keywords":
        raise UserError(f"metric 'check_history_deleted': type must be 'keywords', got {kind!r}")
    keywords = [str(k).lower() for k in _string_list(rules, "keywords", "check_history_deleted")]
    urls = _history_urls(result)
    if urls is None:
        return 0.0
    return float(not any(keyword in url.lower() for url in urls for keyword in keywords))


CHROME_DEFAULT_FONT_SIZE = 16


@metric("check_font_size")
def check_font_size(result: Any, rules: Any) -> float:
    """1 when Chromium's default font size fits the rule.

    result = the font-size dict of getter ``chrome_font_size`` (or a whole Preferences dict).
    ``rules["type"]``: ``value`` (equals ``value``) or ``range`` (``min < size < max``, strict as
    in the anchor). ``rules["key"]`` picks another size (``minimum_font_size``,
    ``default_fixed_font_size``). An unset default_font_size is Chromium's default, 16.
    """
    kind = rule_value(rules, "type", "check_font_size")
    key = rule_value(rules, "key", "check_font_size", default="default_font_size")
    if kind == "value":
        bounds = [rule_value(rules, "value", "check_font_size")]
    elif kind == "range":
        bounds = [rule_value(rules, "min", "check_font_size"), rule_value(rules, "max", "check_font_size")]
    else:
        raise UserError(f"metric 'check_font_size': type must be 'value' or 'range', got {kind!r}")
    if not all(_is_number(b) for b in bounds):
        raise UserError(f"metric 'check_font_size': value/min/max must be numbers, got {bounds!r}")
    if not isinstance(result, dict):
        return 0.0
    sizes = _walk_dicts(result, ["webkit", "webprefs"]) if "webkit" in result else result
    size = sizes.get(key, CHROME_DEFAULT_FONT_SIZE if key == "default_font_size" else None) if isinstance(sizes, dict) else None
    if not _is_number(size):
        return 0.0
    return float(size == bounds[0] if kind == "value" else bounds[0] < size < bounds[1])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _walk_dicts(data: Any, keys: list[str]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


# ============================================================================================
# Thunderbird: prefs.js, msgFilterRules.dat and mbox folder files of a profile

_USER_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"\\]|\\.)+)",\s*(?P<value>.+)\);$')


def _pref_value(literal: str) -> Any:
    """A prefs.js value (a JS literal: true, 42, "text") as Python; the raw text if it is no JSON."""
    try:
        return json.loads(literal)
    except ValueError:
        return literal


def thunderbird_prefs(text: str) -> list[tuple[str, Any]]:
    """``(name, value)`` of every ``user_pref("name", value);`` line of a prefs.js, in file order."""
    prefs = []
    for line in text.splitlines():
        match = _USER_PREF.match(line.strip())
        if match:
            prefs.append((_pref_value(f'"{match.group("key")}"'), _pref_value(match.group("value").strip())))
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

    result = path of a profile's prefs.js (Thunderbird writes it on exit; close it first). Values are
    the JS literals decoded (``true`` is True, strings unescaped), matched by ``matchers.match_value``.
    A pref Thunderbird left at its default is not in the file: an ``expect`` on it scores 0.
    """
    expect, unexpect = _pref_rules(rules, "expect"), _pref_rules(rules, "unexpect")
    if not expect and not unexpect:
        raise UserError("metric 'check_thunderbird_prefs' needs 'expect' or 'unexpect' rules")
    text = _text_or_none(result)
    if text is None:
        return 0.0
    met = dict.fromkeys(expect, False)
    for name, value in thunderbird_prefs(text):
        if name in expect:
            met[name] = match_value(value, expect[name])  # the last line for a pref wins, as in Thunderbird
        elif name in unexpect and match_value(value, unexpect[name]):
            return 0.0
    return float(all(met.values()))


_FILTER_TERM = re.compile(r'\b(?:AND|OR) \((?:"(?:[^"\\]|\\.)*"|[^,()]*),[^,()]*,(?:"(?:[^"\\]|\\.)*"|[^)]*)\)|\bALL\b')


def _filter_value(raw: str) -> str:
    """The text of a msgFilterRules.dat value: ``"…"`` with ``\\"`` and ``\\\\`` escapes."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]
    return re.sub(r'\\(["\\])', r"\1", raw)


def thunderbird_filters(text: str) -> list[dict[str, Any]]:
    """The filters of a msgFilterRules.dat: ``{name, enabled, type, condition: [terms], actions: [{action,
    actionValue?}], …}``. ``condition`` is split into its terms (``AND (subject,contains,x)``, ``ALL``)."""
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        if not sep:
            continue
        value = _filter_value(raw)
        if key == "name":
            current = {"name": value, "actions": []}
            filters.append(current)
        elif current is None:
            continue  # the file's header: version, logging
        elif key == "action":
            current["actions"].append({"action": value})
        elif key == "actionValue" and current["actions"]:
            current["actions"][-1]["actionValue"] = value
        elif key == "condition":
            current["condition"] = _FILTER_TERM.findall(value)
        else:
            current[key] = value
    return filters


def _filter_records(flt: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat record per action of a filter (the filter's fields plus that action)."""
    base = {k: v for k, v in flt.items() if k != "actions"}
    return [{**base, **action} for action in flt["actions"]] or [base]


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
    filter when each of its fields equals the filter's (``condition`` as the list of terms). A filter
    with several actions fits when one of its actions does; OSWorld looked at the last action only.
    """
    expect, unexpect = _record_list(rules, "expect"), _record_list(rules, "unexpect")
    text = _text_or_none(result)
    if text is None:
        return 0.0
    records = [r for flt in thunderbird_filters(text) for r in _filter_records(flt)]
    if any(_fits(pattern, r) for pattern in unexpect for r in records):
        return 0.0
    return float(all(any(_fits(pattern, r) for r in records) for pattern in expect))


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

    result = entry names (getter ``list_directory``) or a tree ``{"children": [{"name"}…]}``.
    Compared as sets, and the counts must agree.
    """
    expected = _string_list(rules, "expected", "check_moved_jpgs")
    if isinstance(result, dict):
        result = [c.get("name") for c in _children(result)]
    if not isinstance(result, list):
        return 0.0
    names = [str(name) for name in result]
    return float(len(names) == len(expected) and set(names) == {str(e) for e in expected})
