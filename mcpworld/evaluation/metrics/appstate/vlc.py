"""Metrics over VLC's state: settings in its vlcrc (INI-like ``key=value`` lines under ``[module]``
sections, defaults commented out with ``#``) and what it is playing (its HTTP interface's status.xml).
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import read_text_strict
from mcpworld.evaluation.registry import metric

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
    f"information/category[@name='Stream 0']/info[@name='{n}']" for n in ("Codec", "Type", "Language")
]


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
        return float(bool(shown and _url_fits(shown, expected)))
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
    return _vlc_setting_is(result, rules, "check_one_instance_when_started_from_file", "one-instance-when-started-from-file", "1")


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
    triples = zip(numbers[0::3], numbers[1::3], numbers[2::3], strict=False)
    return float(all(channel < BLACKISH_BELOW for triple in triples for channel in triple))
