"""App-state getters: task cache files, dates, screen/window geometry and application config files.

Every getter is ``(env, cfg) -> value`` and uses only the Environment API. As in ``getters``:
a missing file gives ``None`` (the app never wrote it; every metric scores ``None`` as 0), and a
config mistake by the task author raises UserError.

Home paths in copied text config files. Apps write absolute paths into their config (VLC's
recording folder, LibreOffice's work directory, Chromium's download folder) using the episode's
real home directory, while task files spell them ``/home/user/...``. The config getters here
therefore replace the episode home in the copied text by ``/home/user`` so metrics compare the
task's view of the path. ``canonical_home: false`` in the getter config keeps the bytes verbatim.
"""

from __future__ import annotations

import copy
import json
import logging
import posixpath
import re
import shlex
import time
from calendar import monthrange
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.getters import cache_target, require
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)

TASK_HOME = "/home/user"


@getter("accessibility_tree")
def accessibility_tree(env: "Environment", cfg: dict[str, Any]) -> str:
    """The live AT-SPI tree of the desktop as XML, for ``check_accessibility_tree``.

    Only a live desktop has one: standalone grading of a home directory raises InfraError.
    """
    return env.accessibility_tree(timeout_s=float(cfg.get("timeout", 60.0)))


# --------------------------------------------------------------------------------------------
# copying files into the cache


def canonical_home(env: "Environment", data: bytes) -> bytes:
    """``data`` with the episode's real home directory written as ``/home/user``."""
    homes = {str(env.home).rstrip("/"), str(Path(env.home).resolve()).rstrip("/")}
    for home in sorted(homes, key=len, reverse=True):
        if not home or home == TASK_HOME:
            continue
        # Not followed by a character that would continue the last path component (/tmp/x/home2).
        data = re.sub(re.escape(home.encode()) + rb"(?![\w.\-])", TASK_HOME.encode(), data)
    return data


def _read(env: "Environment", path: str) -> bytes | None:
    try:
        return env.read_file(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _copy_config(env: "Environment", cfg: dict[str, Any], path: str, dest: str, getter_name: str) -> str | None:
    """Copy ``path`` into ``cache_dir/dest`` (home canonicalised unless disabled); local path or None."""
    target = cache_target(env, dest, getter_name)
    data = _read(env, path)
    if data is None:
        log.info("%s: %s does not exist in the environment", getter_name, path)
        target.unlink(missing_ok=True)  # never let a later reader see an older copy
        return None
    if cfg.get("canonical_home", True):
        data = canonical_home(env, data)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return str(target)


def _first_existing(env: "Environment", candidates: list[str]) -> str:
    """The first candidate path that exists in the environment, else the first one."""
    for candidate in candidates:
        if env.resolve(candidate).exists():
            return candidate
    return candidates[0]


# --------------------------------------------------------------------------------------------
# generic


@getter("cache_file")
def cache_file(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local path of a file in the task cache (relative ``path``) or on the host (absolute), or None.

    Typically the output a postconfig step saved into the cache. A missing file gives None
    (the anchor asserted, which aborted the whole task). A relative path may not leave the cache.
    """
    path = require(cfg, "path")
    if not isinstance(path, str) or not path:
        raise UserError(f"getter 'cache_file': 'path' must be a file name, got {path!r}")
    target = Path(path) if Path(path).is_absolute() else cache_target(env, path, "cache_file")
    return str(target) if target.is_file() else None


@getter("vm_screen_size")
def vm_screen_size(env: "Environment", cfg: dict[str, Any]) -> dict[str, int]:
    """The screen size ``{"width", "height"}`` in pixels."""
    return {"width": int(env.width), "height": int(env.height)}


def _parse_geometry(text: str) -> list[dict[str, int]]:
    """Windows from ``xdotool getwindowgeometry --shell`` output (blocks of KEY=value lines)."""
    windows: list[dict[str, int]] = []
    current: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep:
            continue
        if key == "WINDOW" and current:
            windows.append(current)
            current = {}
        try:
            current[key] = int(value)
        except ValueError:
            pass
    if current:
        windows.append(current)
    return [w for w in windows if "WIDTH" in w and "HEIGHT" in w]


@getter("vm_window_size")
def vm_window_size(env: "Environment", cfg: dict[str, Any]) -> dict[str, int] | None:
    """``{"width", "height"}`` of the visible window whose WM class is ``app_class_name``, or None.

    With several matching windows (apps keep small helper windows) the largest is taken.
    """
    name = require(cfg, "app_class_name")
    command = f"xdotool search --onlyvisible --class {shlex.quote(str(name))} getwindowgeometry --shell %@"
    result = env.shell(command, timeout=float(cfg.get("timeout", 10.0)))
    if result.returncode == 127 or "command not found" in result.stderr:
        raise InfraError("getter 'vm_window_size' needs xdotool in the environment")
    if "open display" in result.stderr:
        raise InfraError(f"getter 'vm_window_size': no X display: {result.stderr.strip()[-200:]}")
    windows = _parse_geometry(result.stdout)
    if not windows:
        return None
    biggest = max(windows, key=lambda w: w["WIDTH"] * w["HEIGHT"])
    return {"width": biggest["WIDTH"], "height": biggest["HEIGHT"]}


# --------------------------------------------------------------------------------------------
# rule_relativeTime

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
DOW_SHORT = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS_FULL = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December"]
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())} | {"a": 1, "an": 1}
ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}

SUPPORTED_PHRASES = (
    "today, tomorrow, yesterday, day after tomorrow; in N days/weeks/months, N days/weeks/months later|from now|ago; "
    "this|next|last <weekday>; this|next month, next week, next year; <Nth> [of] this|next month; "
    "<first..fifth|last> <weekday> [of] this|next month | N months later"
)


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return NUMBER_WORDS.get(word)


def _add_months(day: date, months: int, day_of_month: int | None = None) -> date:
    """``day`` moved by ``months``; the day of month (or ``day_of_month``) is clamped to the month's end."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    wanted = day.day if day_of_month is None else day_of_month
    return date(year, month, min(wanted, monthrange(year, month)[1]))


def _nth_weekday(year: int, month: int, weekday: int, nth: int) -> date:
    """The ``nth`` (1-based; -1 = last) ``weekday`` of a month."""
    if nth == -1:
        last = date(year, month, monthrange(year, month)[1])
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = date(year, month, 1)
    day = first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))
    if day.month != month:
        raise UserError(f"getter 'rule_relativeTime': there is no {nth}th {WEEKDAYS[weekday]} in {year}-{month:02d}")
    return day


_UNIT_DAYS = {"day": 1, "days": 1, "week": 7, "weeks": 7}
_MONTH_OFFSET = {"this": 0, "next": 1, "last": -1}


def _month_offset(words: list[str]) -> int | None:
    """Months from now for a trailing ``[of|in] this|next|last month`` / ``N months later``; None if neither."""
    words = [w for w in words if w not in ("of", "in", "the")]
    if len(words) == 2 and words[1] == "month" and words[0] in _MONTH_OFFSET:
        return _MONTH_OFFSET[words[0]]
    if len(words) == 3 and words[1] in ("month", "months") and words[2] in ("later", "after"):
        return _number(words[0])
    return None


def relative_date(phrase: str, today: date) -> date:
    """The date a relative phrase such as ``next Monday`` or ``first monday four months later`` means.

    Researcher's conventions where the anchor is silent: ``next <weekday>`` is the first such day
    strictly after today, ``this <weekday>`` the first on or after today, ``last <weekday>`` the
    latest strictly before today; a day of month past the month's end is clamped to its last day.
    """
    text = re.sub(r"\s+", " ", str(phrase).strip().lower())
    words = text.split(" ")
    simple = {"today": 0, "now": 0, "tomorrow": 1, "yesterday": -1, "day after tomorrow": 2,
              "the day after tomorrow": 2, "day before yesterday": -2, "next week": 7}
    if text in simple:
        return today + timedelta(days=simple[text])
    if text in ("this month", "next month", "last month", "next year", "last year"):
        months = {"this month": 0, "next month": 1, "last month": -1, "next year": 12, "last year": -12}[text]
        return _add_months(today, months)
    # this|next|last <weekday>
    if len(words) == 2 and words[0] in ("this", "next", "last", "coming") and words[1] in WEEKDAYS:
        target = WEEKDAYS.index(words[1])
        ahead = (target - today.weekday()) % 7
        if words[0] == "last":
            return today - timedelta(days=(today.weekday() - target) % 7 or 7)
        if words[0] in ("next", "coming"):
            ahead = ahead or 7
        return today + timedelta(days=ahead)
    # in N days|weeks|months / N days|weeks|months later|from now|ago
    count_match = re.fullmatch(r"(?:in )?(\w+) (day|days|week|weeks|month|months)(?: (later|after|from now|ago))?", text)
    if count_match and (text.startswith("in ") or count_match.group(3)):
        n = _number(count_match.group(1))
        if n is not None:
            sign = -1 if count_match.group(3) == "ago" else 1
            unit = count_match.group(2)
            if unit.startswith("month"):
                return _add_months(today, sign * n)
            return today + timedelta(days=sign * n * _UNIT_DAYS[unit])
    # <Nth> [of] this|next month  (5th next month, 10th of next month)
    nth_day = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)? (.+)", text)
    if nth_day:
        months = _month_offset(nth_day.group(2).split(" "))
        if months is not None and 1 <= int(nth_day.group(1)) <= 31:
            return _add_months(today, months, int(nth_day.group(1)))
    # <first..last> <weekday> [of] this|next month / N months later
    if len(words) >= 3 and words[0] in ORDINAL_WORDS and words[1] in WEEKDAYS:
        months = _month_offset(words[2:])
        if months is not None:
            month_day = _add_months(today.replace(day=1), months)
            return _nth_weekday(month_day.year, month_day.month, WEEKDAYS.index(words[1]), ORDINAL_WORDS[words[0]])
    raise UserError(f"getter 'rule_relativeTime': cannot understand the relative time {phrase!r}; supported: {SUPPORTED_PHRASES}")


def format_date(template: str, day: date) -> str:
    """Fill ``{DoW} {DoWFull} {Month} {MonthFull} {month} {Month0D} {MonthD} {DayD} {Day0D} {Year}``.

    Every occurrence is replaced (the anchor replaced only the first); other braces stay as they are.
    """
    values = {
        "DoW": DOW_SHORT[day.weekday()],
        "DoWFull": WEEKDAYS[day.weekday()].capitalize(),
        "Month": MONTHS_FULL[day.month - 1][:3],
        "MonthFull": MONTHS_FULL[day.month - 1],
        "month": MONTHS_FULL[day.month - 1],
        "Month0D": f"{day.month:02d}",
        "MonthD": str(day.month),
        "DayD": str(day.day),
        "Day0D": f"{day.day:02d}",
        "Year": str(day.year),
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _format_templates(value: Any, day: date) -> Any:
    if isinstance(value, str):
        return format_date(value, day)
    if isinstance(value, list):
        return [_format_templates(v, day) for v in value]
    if isinstance(value, dict):
        return {k: _format_templates(v, day) for k, v in value.items()}
    return value


def _offset_tz(text: str) -> tzinfo | None:
    match = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", text.strip())
    if not match:
        return None
    delta = timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))
    return timezone(-delta if match.group(1) == "-" else delta)


def environment_now(env: "Environment", tz_name: str | None) -> datetime:
    """Now, by the environment's clock, in ``tz_name``, else the environment's zone, else UTC."""
    zone: tzinfo | None = None
    if tz_name:
        try:
            zone = ZoneInfo(tz_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise UserError(f"getter 'rule_relativeTime': unknown timezone {tz_name!r} (use an IANA name)") from None
    instant = time.time()
    env_zone: tzinfo | None = None
    try:
        result = env.shell("date +%s' '%z", timeout=10.0)
        seconds, _, offset = result.stdout.strip().partition(" ")
        if result.returncode == 0 and seconds.isdigit():
            instant = float(seconds)
            env_zone = _offset_tz(offset)
    except Exception as exc:  # the host clock is the fallback; never fail the task over it
        log.info("rule_relativeTime: cannot read the environment's clock: %s", exc)
    return datetime.fromtimestamp(instant, zone or env_zone or timezone.utc)


@getter("rule_relativeTime")
def rule_relative_time(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``rules`` whose ``expected`` date templates are filled from relative phrases.

    ``rules.relativeTime`` is ``{"from": phrase}`` (fills ``expected.time``, or ``expected.from``)
    or ``{"from": phrase, "to": phrase}`` (fills ``expected.from`` / ``expected.to``); each
    template is a string, or a list/dict of them. ``rules.timezone`` (IANA) picks the zone, else the
    environment's own, else UTC. The caller's config is not modified (the anchor mutated it).
    """
    rules = require(cfg, "rules")
    if not isinstance(rules, dict):
        raise UserError(f"getter 'rule_relativeTime': 'rules' must be a mapping, got {rules!r}")
    relative = rules.get("relativeTime")
    if isinstance(relative, str):
        relative = {"from": relative}
    expected = rules.get("expected")
    if not isinstance(relative, dict) or not relative or not isinstance(expected, dict):
        raise UserError("getter 'rule_relativeTime' needs rules.relativeTime {from[, to]} and rules.expected {…}")
    today = environment_now(env, rules.get("timezone")).date()
    out = copy.deepcopy(rules)
    for key, phrase in relative.items():
        target = key
        if key not in expected and key == "from" and "to" not in relative and "time" in expected:
            target = "time"
        if target not in expected:
            raise UserError(f"getter 'rule_relativeTime': relativeTime.{key} has no template in rules.expected")
        out["expected"][target] = _format_templates(expected[target], relative_date(phrase, today))
    return out


# --------------------------------------------------------------------------------------------
# application config files


@getter("vlc_config")
def vlc_config(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy of VLC's ``vlcrc`` (``path``, default ``~/.config/vlc/vlcrc``) at ``dest``, or None."""
    path = cfg.get("path") or "~/.config/vlc/vlcrc"
    return _copy_config(env, cfg, path, cfg.get("dest") or "vlcrc", "vlc_config")


@getter("vlc_playing_info")
def vlc_playing_info(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy (at ``dest``, default ``status.xml``) of the running VLC's ``status.xml`` from its
    HTTP interface (this desktop's port and password), or None when no VLC answers there."""
    import httpx

    port = getattr(env, "ports", {}).get("vlc")
    if port is None:
        raise InfraError("getter 'vlc_playing_info': this environment starts no VLC HTTP interface")
    try:
        reply = httpx.get(f"http://127.0.0.1:{port}/requests/status.xml", auth=("", env.app_password), timeout=10)
    except httpx.HTTPError as exc:
        log.info("vlc_playing_info: VLC's HTTP interface did not answer: %s", exc)
        return None
    if reply.status_code != 200:
        log.info("vlc_playing_info: VLC's HTTP interface answered %s", reply.status_code)
        return None
    target = Path(env.cache_dir) / (cfg.get("dest") or "status.xml")
    target.write_bytes(reply.content)
    return str(target)


GIMP_CONFIG_DIRS = ["~/.config/GIMP/2.10", "~/.config/GIMP/3.0"]


@getter("gimp_config_file")
def gimp_config_file(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy of a GIMP config file (``file_name``, default ``gimprc``) at ``dest``, or None.

    The folder is ``config_dir`` if given, else ``~/.config/GIMP/2.10``, else ``.../3.0``
    (the first that holds the file).
    """
    name = cfg.get("file_name") or "gimprc"
    folders = [cfg["config_dir"]] if cfg.get("config_dir") else GIMP_CONFIG_DIRS
    path = _first_existing(env, [posixpath.join(folder, name) for folder in folders])
    return _copy_config(env, cfg, path, cfg.get("dest") or posixpath.basename(name), "gimp_config_file")


@getter("libreoffice_config")
def libreoffice_config(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy of LibreOffice's ``registrymodifications.xcu`` (``path`` overrides), or None.

    The metrics ``find_default_font`` and ``check_libre_locale`` read it.
    """
    path = cfg.get("path") or "~/.config/libreoffice/4/user/registrymodifications.xcu"
    return _copy_config(env, cfg, path, cfg.get("dest") or "registrymodifications.xcu", "libreoffice_config")


CHROMIUM_PROFILES = [
    "~/.config/chromium/Default",
    "~/.config/google-chrome/Default",
    "~/snap/chromium/common/chromium/Default",
]


def _profile_file(env: "Environment", cfg: dict[str, Any], name: str) -> str:
    """Path of ``name`` in ``cfg["profile_dir"]``, else in the first default profile that has it."""
    if cfg.get("profile_dir"):
        return posixpath.join(cfg["profile_dir"], name)
    return _first_existing(env, [posixpath.join(folder, name) for folder in CHROMIUM_PROFILES])


def _profile_json(env: "Environment", cfg: dict[str, Any], name: str) -> Any:
    """Parsed JSON of a profile file; None if absent; ValueError (the getter's failure) if corrupt."""
    path = _profile_file(env, cfg, name)
    data = _read(env, path)
    if data is None:
        return None
    if cfg.get("canonical_home", True):
        data = canonical_home(env, data)
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


_MISSING = object()


def _walk(data: Any, key: Any) -> Any:
    for part in key if isinstance(key, list) else [key]:
        if isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return _MISSING
    return data


@getter("chrome_preferences")
def chrome_preferences(env: "Environment", cfg: dict[str, Any]) -> Any:
    """Parsed Chromium ``Preferences`` of ``profile_dir`` (default: the Chromium/Chrome Default profile).

    With ``key`` (a list of dict keys) only that value is returned (``default`` when absent).
    None when the profile has no Preferences file.
    """
    prefs = _profile_json(env, cfg, "Preferences")
    if prefs is None or cfg.get("key") is None:
        return prefs
    value = _walk(prefs, cfg["key"])
    return cfg.get("default") if value is _MISSING else value


@getter("bookmarks")
def bookmarks(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The ``roots`` object of the profile's ``Bookmarks`` JSON (bookmark_bar, other, synced), or None."""
    data = _profile_json(env, cfg, "Bookmarks")
    if not isinstance(data, dict):
        return None
    roots = data.get("roots")
    return roots if isinstance(roots, dict) else None


@getter("history")
def history(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy of the profile's ``History`` sqlite database at ``dest`` (default ``History``), or None.

    Copied byte for byte (no home rewriting). Chromium should be closed first (a postconfig step)
    so the database is complete; the metrics open the copy read-only.
    """
    path = _profile_file(env, cfg, "History")
    return _copy_config(env, {**cfg, "canonical_home": False}, path, cfg.get("dest") or "History", "history")


CHROME_FONT_DEFAULTS = {"default_font_size": 16, "default_fixed_font_size": 13, "minimum_font_size": 0}


@getter("chrome_font_size")
def chrome_font_size(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The ``webkit.webprefs`` font sizes of the profile's Preferences, Chromium's defaults filled in.

    Chromium stores only changed values. None when there is no Preferences file.
    """
    prefs = _profile_json(env, cfg, "Preferences")
    if prefs is None:
        return None
    webprefs = _walk(prefs, ["webkit", "webprefs"])
    return {**CHROME_FONT_DEFAULTS, **(webprefs if isinstance(webprefs, dict) else {})}


# --------------------------------------------------------------------------------------------
# desktop settings: default applications, wallpaper


# The video types whose default application decides "the default video player" (as OSWorld asks).
VIDEO_TYPES = (
    "3gp 3gpp 3gpp2 avi divx dv fli flv mp2t mp4 mp4v-es mpeg mpeg-system msvideo ogg quicktime vnd.divx "
    "vnd.mpegurl vnd.rn-realvideo webm x-anim x-avi x-flc x-fli x-flv x-m4v x-matroska x-mpeg x-mpeg-system "
    "x-mpeg2 x-ms-asf x-ms-asf-plugin x-ms-asx x-ms-wm x-ms-wmv x-ms-wmx x-ms-wvx x-msvideo x-nsv x-ogm "
    "x-ogm+ogg x-theora x-theora+ogg"
).split()


@getter("default_video_player")
def default_video_player(env: "Environment", cfg: dict[str, Any]) -> str:
    """The desktop entry (``vlc.desktop``) that is the default application for most video types,
    by ``xdg-mime query default video/<type>``; ``"unknown"`` when no type has one.

    ``xdg-mime`` reads the user's ``~/.config/mimeapps.list`` (what a file manager's "set as
    default" and ``xdg-mime default`` write). OSWorld listed most types twice; here each counts once.
    """
    types = " ".join(shlex.quote(f"video/{t}") for t in VIDEO_TYPES)
    script = f'for t in {types}; do printf "%s\\n" "$(xdg-mime query default "$t" 2>/dev/null)"; done'
    result = env.shell(script, timeout=float(cfg.get("timeout", 60.0)))
    if result.returncode == 127 or "xdg-mime: command not found" in result.stderr:
        raise InfraError("getter 'default_video_player' needs xdg-mime (xdg-utils) in the environment")
    counts: dict[str, int] = {}
    for line in result.stdout.splitlines():
        if line.strip():
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    return max(counts, key=counts.__getitem__) if counts else "unknown"  # ties: the first seen


def _setting_files(env: "Environment", patterns: list[str]) -> list[tuple[int, str]]:
    """``(mtime, path)`` of the home files matching the glob patterns (relative to the home)."""
    globs = " ".join(f'"$HOME"/{p}' for p in patterns)
    result = env.shell(f'for f in {globs}; do [ -f "$f" ] && printf "%s\\t%s\\n" "$(stat -c %Y "$f")" "$f"; done; true',
                       timeout=30.0)
    found = []
    for line in result.stdout.splitlines():
        mtime, _, path = line.partition("\t")
        if mtime.isdigit() and path:
            found.append((int(mtime), path))
    return found


def _file_uri_path(value: str) -> str:
    """``'file:///a/b%20c.png'`` (as gsettings prints it) → ``/a/b c.png``."""
    from urllib.parse import unquote, urlparse

    value = value.strip().strip("'\"")
    return unquote(urlparse(value).path) if value.startswith("file://") else value


def _gsettings_wallpaper(env: "Environment") -> str | None:
    result = env.shell("gsettings get org.gnome.desktop.background picture-uri", timeout=30.0)
    if result.returncode != 0 or not result.stdout.strip():
        return None
    return _file_uri_path(result.stdout) or None


def _pcmanfm_wallpaper(env: "Environment", path: str) -> str | None:
    data = _read(env, path)
    if data is None:
        return None
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "wallpaper" and value.strip():
            return value.strip()
    return None


@getter("vm_wallpaper")
def vm_wallpaper(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Local copy (at ``dest``) of the desktop's wallpaper image file, or None when none is set or
    the file is gone.

    OSWorld reads GNOME's ``org.gnome.desktop.background picture-uri``. That setting works on this
    desktop too (``gsettings set`` stores it in the desktop's dconf database), and so does
    pcmanfm's desktop wallpaper (``pcmanfm --set-wallpaper``, its desktop preferences). The
    setting written last wins; GSettings' default counts only when nothing was set.
    """
    dest = cfg.get("dest") or "wallpaper.png"
    candidates = _setting_files(env, [".config/dconf/user", ".config/pcmanfm/*/desktop-items-*.conf"])
    image = None
    for _, path in sorted(candidates, reverse=True):
        image = _gsettings_wallpaper(env) if path.endswith("/dconf/user") else _pcmanfm_wallpaper(env, path)
        if image:
            break
    if not image:
        image = _gsettings_wallpaper(env)
    if not image:
        log.info("vm_wallpaper: no wallpaper is set")
        return None
    return _copy_config(env, {"canonical_home": False}, image, dest, "vm_wallpaper")


# --------------------------------------------------------------------------------------------
# terminal output

# Where this desktop's xterm logs what it shows (xterm -l -lf <this>; see vm_terminal_output).
TERMINAL_LOG = "~/.cache/mcpworld/terminal.log"

_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CSI = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])")
_OTHER_ESCAPE = re.compile(r"\x1b(?:[()*+][0-9A-Za-z]|[ -/]*[0-~])")


def terminal_text(raw: str) -> str:
    """The text a terminal's output stream leaves on its lines: escape sequences dropped, carriage
    returns, backspaces and line-editing moves (cursor left/right, erase to end of line, delete and
    insert characters) replayed, so a command line edited in readline reads as it was run."""
    raw = _OSC.sub("", raw)
    lines: list[str] = []
    line: list[str] = []
    col = 0
    pos = 0
    while pos < len(raw):
        char = raw[pos]
        if char == "\x1b":
            csi = _CSI.match(raw, pos)
            if csi:
                params, final = csi.group(1), csi.group(2)
                count = int(params) if params.isdigit() else 1
                if final == "D":
                    col = max(0, col - count)
                elif final == "C":
                    col += count
                elif final == "K" and params in ("", "0"):
                    del line[col:]
                elif final == "P":
                    del line[col:col + count]
                elif final == "@":
                    line[col:col] = [" "] * count
                pos = csi.end()
                continue
            other = _OTHER_ESCAPE.match(raw, pos)
            pos = other.end() if other else pos + 1
            continue
        if char == "\n":
            lines.append("".join(line).rstrip())
            line, col = [], 0
        elif char == "\r":
            col = 0
        elif char == "\b":
            col = max(0, col - 1)
        elif char == "\t" or char >= " ":
            if col > len(line):
                line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = char
            else:
                line.append(char)
            col += 1
        pos += 1
    lines.append("".join(line).rstrip())
    return "\n".join(lines).rstrip()


@getter("vm_terminal_output")
def vm_terminal_output(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """The text the desktop's terminal shows: its output since it started, as lines (None when no
    terminal has run).

    OSWorld reads the accessibility text of the focused GNOME Terminal tab (when its window is
    active). This desktop's terminal is xterm, which has no accessibility text; the desktop starts
    it logging everything it displays to ``TERMINAL_LOG`` (``xterm -l -lf …``), and this getter
    replays that log into text (``terminal_text``). Differences: the log holds every xterm of the
    episode, not only the focused one, and text a full-screen program drew or ``clear`` wiped is
    still in it. ``path`` reads another log.
    """
    data = _read(env, cfg.get("path") or TERMINAL_LOG)
    if data is None:
        log.info("vm_terminal_output: no terminal log at %s (no xterm ran, or it was not started logging)",
                 cfg.get("path") or TERMINAL_LOG)
        return None
    return terminal_text(data.decode("utf-8", errors="replace"))


# --------------------------------------------------------------------------------------------
# VS Code


@getter("vscode_config")
def vscode_config(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """Run a VS Code command by its palette name, then copy the file it writes: local path, or None.

    ``vscode_extension_command`` is typed into the command palette (Ctrl+Shift+P) of the active
    VS Code window and run; OSWorld's tasks install an evaluation extension whose command writes
    ``path`` (e.g. the open folder's name into ~/OpenProject.txt). Waits up to ``timeout`` seconds
    (default 5; OSWorld waited 1) for the file to appear or change, then copies it to ``dest``.
    """
    command = require(cfg, "vscode_extension_command")
    path = require(cfg, "path")
    target = env.resolve(path)
    before = target.stat().st_mtime_ns if target.exists() else None
    env.act({"kind": "key", "keys": "ctrl+shift+p"})
    time.sleep(0.5)
    env.act({"kind": "type", "text": str(command)})
    time.sleep(0.5)
    env.act({"kind": "key", "keys": "Return"})
    deadline = time.monotonic() + float(cfg.get("timeout", 5.0))
    while time.monotonic() < deadline:
        if target.exists() and target.stat().st_mtime_ns != before:
            time.sleep(0.2)  # let the extension finish writing
            break
        time.sleep(0.1)
    return _copy_config(env, {"canonical_home": False}, path, cfg.get("dest") or posixpath.basename(path), "vscode_config")


# --------------------------------------------------------------------------------------------
# clipboard


def _wait_for_event(display: Any, kind: int, deadline: float) -> Any:
    import select

    while True:
        while display.pending_events():
            event = display.next_event()
            if event.type == kind:
                return event
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        select.select([display], [], [], remaining)


def read_selection(display_name: str, selection: str = "CLIPBOARD", timeout: float = 5.0) -> str | None:
    """The text of an X selection (what ``xsel --clipboard --output`` prints), asked of its owner
    through python-xlib; None when nobody owns it or the owner offers no text.

    Text as UTF8_STRING, else STRING (Latin-1). An owner that answers INCR (a transfer in pieces,
    for text beyond the X server's request size, a few hundred KiB) is not read: None.
    """
    from Xlib import X

    from mcpworld.env.xconnection import open_display

    display = open_display(display_name)
    try:
        owned = display.intern_atom(selection)
        if display.get_selection_owner(owned) == X.NONE:
            return None
        window = display.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        prop = display.intern_atom("MCPWORLD_SELECTION")
        deadline = time.monotonic() + timeout
        for target, encoding in (("UTF8_STRING", "utf-8"), ("STRING", "latin-1")):
            window.convert_selection(owned, display.intern_atom(target), prop, X.CurrentTime)
            display.flush()
            event = _wait_for_event(display, X.SelectionNotify, deadline)
            if event is None:
                raise InfraError(f"the owner of the X selection {selection} did not answer within {timeout:g} s")
            if event.property == X.NONE:
                continue
            reply = window.get_full_property(prop, X.AnyPropertyType)
            window.delete_property(prop)
            if reply is None or reply.property_type == display.intern_atom("INCR"):
                log.info("read_selection: %s is not offered in one piece; not read", selection)
                return None
            value = reply.value
            return value.decode(encoding, errors="replace") if isinstance(value, bytes) else str(value)
        return None
    finally:
        display.close()


@getter("vm_clipboard")
def vm_clipboard(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """The text on the desktop's clipboard (``selection``: CLIPBOARD, or PRIMARY for the mouse
    selection), or None when it is empty; read from the X server as ``xsel``/``xclip`` would.

    OSWorld's task reads it with ``xsel --clipboard --output`` inside the VM; this desktop has no
    xsel unless installed, and this getter needs nothing in the environment but its X display.
    """
    selection = str(cfg.get("selection", "CLIPBOARD")).upper()
    if selection not in ("CLIPBOARD", "PRIMARY", "SECONDARY"):
        raise UserError(f"getter 'vm_clipboard': selection must be CLIPBOARD, PRIMARY or SECONDARY, got {selection!r}")
    display = env.shell('printf %s "$DISPLAY"', timeout=10.0).stdout.strip()
    if not display:
        raise InfraError("getter 'vm_clipboard' needs the environment's X display (a live desktop)")
    return read_selection(display, selection, float(cfg.get("timeout", 5.0)))


# --------------------------------------------------------------------------------------------
# Windows Agent Arena's file getters, for its tasks that make sense on this desktop
#
# WAA's tasks name the account's folders as C:\Users\Docker\…; those paths are read as the same
# folders of this desktop's home (/home/user/…). Results keep WAA's types: some getters return
# True/False or 1.0/0.0, others the strings "true"/"false", which the tasks' exact_match rules expect.

_WAA_HOME = re.compile(r"^[A-Za-z]:[\\/]+Users[\\/]+Docker(?=[\\/]|$)", re.I)
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")


def waa_path(path: Any, getter_name: str) -> str:
    """A task path, with WAA's ``C:\\Users\\Docker\\…`` read as ``/home/user/…``."""
    if not isinstance(path, str) or not path.strip():
        raise UserError(f"getter {getter_name!r}: expected a path, got {path!r}")
    match = _WAA_HOME.match(path)
    if match:
        return "/home/user" + path[match.end():].replace("\\", "/")
    if _WINDOWS_PATH.match(path):
        raise UserError(f"getter {getter_name!r}: {path!r} is a Windows path outside the user's folders")
    return path


def _true_false(value: bool) -> str:
    return "true" if value else "false"


def _waa_text(env: "Environment", path: str) -> str | None:
    data = _read(env, path)
    return None if data is None else data.decode("utf-8", errors="replace")


@getter("vm_file_exists_in_vm_folder")
def vm_file_exists_in_vm_folder(env: "Environment", cfg: dict[str, Any]) -> float:
    """1.0 when ``folder_name`` holds the file ``file_name`` with some content, else 0.0 (an empty
    file counts as absent, as in WAA, which fetched the file and tested its bytes)."""
    folder = waa_path(require(cfg, "folder_name"), "vm_file_exists_in_vm_folder")
    name = require(cfg, "file_name")
    return float(bool(_read(env, posixpath.join(folder, str(name)))))


@getter("vm_folder_exists_in_documents")
def vm_folder_exists_in_documents(env: "Environment", cfg: dict[str, Any]) -> bool:
    """Whether ~/Documents holds the folder ``folder_name``."""
    return env.resolve(posixpath.join("~/Documents", str(require(cfg, "folder_name")))).is_dir()


@getter("vm_file_exists_in_desktop")
def vm_file_exists_in_desktop(env: "Environment", cfg: dict[str, Any]) -> bool:
    """Whether ~/Desktop holds an entry (file, folder or link) named ``file_name``."""
    target = env.resolve(posixpath.join("~/Desktop", str(require(cfg, "file_name"))))
    return target.exists() or target.is_symlink()


@getter("is_file_desktop")
def is_file_desktop(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when ~/Desktop holds the file ``filename``."""
    return _true_false(_read(env, posixpath.join("~/Desktop", str(require(cfg, "filename")))) is not None)


@getter("is_file_saved_desktop")
def is_file_saved_desktop(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when the text file ~/Desktop/``filename`` contains ``textcontent`` (with ``exact``:
    equals it, line endings and surrounding whitespace aside)."""
    text = _waa_text(env, posixpath.join("~/Desktop", str(require(cfg, "filename"))))
    expected = str(require(cfg, "textcontent"))
    if text is None:
        return "false"
    if cfg.get("exact", False):
        def normalise(value: str) -> str:
            return value.replace("\r\n", "\n").replace("\r", "\n").strip()
        return _true_false(normalise(text) == normalise(expected))
    return _true_false(expected in text)


@getter("is_file_hidden")
def is_file_hidden(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when the file ``file_path`` is hidden the Linux way: its name starts with a dot,
    its folder's ``.hidden`` file lists it (what GTK file managers such as pcmanfm honour), or it
    was renamed to ``.<name>`` beside where it was. (On Windows it is a file attribute.)"""
    path = waa_path(require(cfg, "file_path"), "is_file_hidden")
    folder, name = posixpath.split(path.rstrip("/"))
    if env.resolve(path).exists():
        listed = (_waa_text(env, posixpath.join(folder, ".hidden")) or "").splitlines()
        return _true_false(name.startswith(".") or name in (line.strip() for line in listed))
    return _true_false(not name.startswith(".") and env.resolve(posixpath.join(folder, "." + name)).exists())


@getter("all_png_file_names")
def all_png_file_names(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when the lines of the text file ``file_path`` are exactly the names of the .png
    files (any case) in ``folder_path``, as sets."""
    text = _waa_text(env, waa_path(require(cfg, "file_path"), "all_png_file_names"))
    folder = waa_path(require(cfg, "folder_path"), "all_png_file_names")
    if text is None:
        return "false"
    try:
        pngs = {name for name in env.list_dir(folder) if name.lower().endswith(".png")}
    except FileNotFoundError:
        return "false"
    return _true_false(set(text.splitlines()) == pngs)


def _files_in(env: "Environment", folder: str) -> list[str]:
    return [name for name in env.list_dir(folder) if env.resolve(posixpath.join(folder, name)).is_file()]


@getter("is_all_docx_in_archive")
def is_all_docx_in_archive(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when ``folder_path`` has an ``Archive`` folder whose files are all .docx (and there is
    at least one), and no .docx file is left directly in ``folder_path``."""
    folder = waa_path(require(cfg, "folder_path"), "is_all_docx_in_archive")
    archive = posixpath.join(folder, "Archive")
    if not env.resolve(archive).is_dir():
        return "false"
    archived = _files_in(env, archive)
    if not archived or not all(name.lower().endswith(".docx") for name in archived):
        return "false"
    return _true_false(not any(name.lower().endswith(".docx") for name in _files_in(env, folder)))


def _tree_names(env: "Environment", folder: str) -> set[str]:
    names: set[str] = set()
    try:
        entries = env.list_dir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return names
    for name in entries:
        names.add(name)
        if env.resolve(posixpath.join(folder, name)).is_dir():
            names |= _tree_names(env, posixpath.join(folder, name))
    return names


@getter("is_files_moved_downloads")
def is_files_moved_downloads(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when ~/OldDownloads/``folder_name``/``file_name`` exists and ~/Downloads no longer
    holds both ``folder_name`` and ``file_name`` (WAA looked for the two names anywhere in the
    folder's tree listing)."""
    folder, name = str(require(cfg, "folder_name")), str(require(cfg, "file_name"))
    left_behind = _tree_names(env, "~/Downloads")
    if folder in left_behind and name in left_behind:
        return "false"
    return _true_false(env.resolve(posixpath.join("~/OldDownloads", folder, name)).exists())


@getter("vm_active_window_title")
def vm_active_window_title(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """The title of the active window (``xdotool getactivewindow getwindowname``), None if none is."""
    result = env.shell("xdotool getactivewindow getwindowname", timeout=float(cfg.get("timeout", 10.0)))
    if result.returncode == 127 or "command not found" in result.stderr:
        raise InfraError("getter 'vm_active_window_title' needs xdotool in the environment")
    title = result.stdout.strip()
    return title if result.returncode == 0 and title else None
