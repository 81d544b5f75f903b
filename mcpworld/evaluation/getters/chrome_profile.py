"""Chromium's profile files (Preferences, Bookmarks, History, Local State, Cookies, extension folders)
and the settings OSWorld's getters read from them.

Every getter is ``(env, cfg) -> value`` and needs no running browser: it reads the Default
profile (``~/.config/google-chrome/Default`` or the other Chromium locations of
``CHROMIUM_PROFILES``; ``profile_dir`` overrides) through the Environment. Values
and their shapes are OSWorld's, including its string booleans (``"true"``/``"false"``) and the
value it gives when a key is absent (Chromium stores only settings that differ from its default).

Where OSWorld answers a missing or unreadable Preferences file with the unrelated string
``"Google"`` (new_startup_page, enable_enhanced_safety_browsing, data_delete_automacally, the
extension lists), these getters give None instead: both fail every task's expected value, and
None says "nothing to read".

Chromium writes Preferences some seconds after a change (and on exit); the OSWorld tasks that
read them restart the browser in a postconfig step first, so the file is current.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING, Any

from mcpworld.evaluation.getters.base import cache_target, canonical_home, copy_to_cache, first_existing, read_or_none, true_false
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


CHROMIUM_PROFILES = [
    "~/.config/chromium/Default",
    "~/.config/google-chrome/Default",
    "~/snap/chromium/common/chromium/Default",
]


def _profile_file(env: Environment, cfg: dict[str, Any], name: str) -> str:
    """Path of ``name`` in ``cfg["profile_dir"]``, else in the first default profile that has it."""
    if cfg.get("profile_dir"):
        return posixpath.join(cfg["profile_dir"], name)
    return first_existing(env, [posixpath.join(folder, name) for folder in CHROMIUM_PROFILES])


def _profile_json(env: Environment, cfg: dict[str, Any], name: str) -> Any:
    """Parsed JSON of a profile file; None if absent; ValueError (the getter's failure) if corrupt."""
    path = _profile_file(env, cfg, name)
    data = read_or_none(env, path)
    if data is None:
        return None
    if cfg.get("canonical_home", True):
        data = canonical_home(env, data)
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def _json_file(env: Environment, cfg: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A profile JSON file as a dict; None when it is absent or not a JSON object (logged)."""
    try:
        data = _profile_json(env, cfg, name)
    except ValueError as exc:
        log.info("%s", exc)
        return None
    return data if isinstance(data, dict) else None


def _preferences(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    return _json_file(env, cfg, "Preferences")


def _get(data: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


@getter("chrome_preferences")
def chrome_preferences(env: Environment, cfg: dict[str, Any]) -> Any:
    """Parsed Chromium ``Preferences`` of ``profile_dir`` (default: the Chromium/Chrome Default profile).

    With ``key`` (a list of dict keys) only that value is returned (``default`` when absent).
    None when the profile has no Preferences file.
    """
    prefs = _profile_json(env, cfg, "Preferences")
    if prefs is None or cfg.get("key") is None:
        return prefs
    key = cfg["key"]
    return _get(prefs, *(key if isinstance(key, list) else [key]), default=cfg.get("default"))


@getter("bookmarks")
def bookmarks(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The ``roots`` object of the profile's ``Bookmarks`` JSON (bookmark_bar, other, synced), or None."""
    data = _profile_json(env, cfg, "Bookmarks")
    if not isinstance(data, dict):
        return None
    roots = data.get("roots")
    return roots if isinstance(roots, dict) else None


@getter("history")
def history(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of the profile's ``History`` sqlite database at ``dest`` (default ``History``), or None.

    Copied byte for byte (no home rewriting). Chromium should be closed first (a postconfig step)
    so the database is complete; the metrics open the copy read-only.
    """
    path = _profile_file(env, cfg, "History")
    return copy_to_cache(env, {**cfg, "canonical_home": False}, path, cfg.get("dest") or "History", "history")


CHROME_FONT_DEFAULTS = {"default_font_size": 16, "default_fixed_font_size": 13, "minimum_font_size": 0}


@getter("chrome_font_size")
def chrome_font_size(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The ``webkit.webprefs`` font sizes of the profile's Preferences, Chromium's defaults filled in.

    Chromium stores only changed values. None when there is no Preferences file.
    """
    prefs = _profile_json(env, cfg, "Preferences")
    if prefs is None:
        return None
    webprefs = _get(prefs, "webkit", "webprefs")
    return {**CHROME_FONT_DEFAULTS, **(webprefs if isinstance(webprefs, dict) else {})}


@getter("default_search_engine")
def default_search_engine(env: Environment, cfg: dict[str, Any]) -> str:
    """Short name of the default search engine; ``"Google"`` (Chromium's default) when none is stored."""
    prefs = _preferences(env, cfg)
    return _get(prefs, "default_search_provider_data", "template_url_data", "short_name", default="Google")


@getter("profile_name")
def profile_name(env: Environment, cfg: dict[str, Any]) -> Any:
    """The profile's name (``profile.name``), or None."""
    return _get(_preferences(env, cfg), "profile", "name")


@getter("data_delete_automacally")
def data_delete_automacally(env: Environment, cfg: dict[str, Any]) -> str | None:
    """``"true"`` when a site-setting default was changed (``profile.default_content_setting_values``).

    OSWorld's test for "delete site data on exit" (the cookies default becomes 4, session only):
    the key appears once any such default is changed. Current Chromium also writes its own
    ``has_migrated_*`` flags there on a fresh profile, which would pass the task untouched; those
    flags are not counted. None without Preferences.
    """
    prefs = _preferences(env, cfg)
    if prefs is None:
        return None
    defaults = _get(prefs, "profile", "default_content_setting_values")
    if isinstance(defaults, dict):
        return true_false(any(not str(key).startswith("has_migrated") for key in defaults))
    return true_false(defaults is not None)


COLOR_SCHEMES = {
    "system": "system",
    "default": "system",
    "0": "system",
    "light": "light",
    "1": "light",
    "dark": "dark",
    "2": "dark",
}


@getter("chrome_appearance_mode_ui")
def chrome_appearance_mode_ui(env: Environment, cfg: dict[str, Any]) -> str:
    """Chromium's appearance mode, ``"light"``, ``"dark"`` or ``"system"``, from Preferences.

    ``browser.theme.color_scheme2`` (else ``color_scheme``): 0 system, 1 light, 2 dark; a
    classic (non-GTK) theme, ``extensions.theme.system_theme`` 0, counts as light. Anything
    unreadable is ``"system"``, the default. OSWorld first asks the live settings page and falls
    back to this same reading; the file alone gives the same answer once Chromium has saved it.
    """
    prefs = _preferences(env, cfg)
    if _get(prefs, "extensions", "theme", "system_theme") in (0, "0", False):
        return "light"
    theme = _get(prefs, "browser", "theme", default={})
    raw = theme.get("color_scheme2", theme.get("color_scheme")) if isinstance(theme, dict) else None
    if not isinstance(raw, (str, int, float)):
        return "system"
    key = raw.strip().lower() if isinstance(raw, str) else str(int(raw))
    return COLOR_SCHEMES.get(key, "system")


# session.restore_on_startup: 5 opens the New Tab page (Chromium's default when unset).
RESTORE_NEW_TAB_PAGE = 5


@getter("new_startup_page")
def new_startup_page(env: Environment, cfg: dict[str, Any]) -> str | None:
    """``"true"`` when Chromium starts on the New Tab page (no ``session`` settings, or restore_on_startup 5)."""
    prefs = _preferences(env, cfg)
    if prefs is None:
        return None
    if "session" not in prefs:
        return "true"
    return true_false(_get(prefs, "session", "restore_on_startup") == RESTORE_NEW_TAB_PAGE)


@getter("enable_do_not_track")
def enable_do_not_track(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when "Send a Do Not Track request" is on, else ``"false"`` (also without Preferences)."""
    return true_false(_get(_preferences(env, cfg), "enable_do_not_track"))


@getter("enable_safe_browsing")
def enable_safe_browsing(env: Environment, cfg: dict[str, Any]) -> str:
    """``"true"`` when standard or enhanced Safe Browsing is stored as on, else ``"false"``."""
    safebrowsing = _get(_preferences(env, cfg), "safebrowsing", default={})
    if not isinstance(safebrowsing, dict):
        return "false"
    return true_false(safebrowsing.get("enhanced") or safebrowsing.get("enabled"))


@getter("enable_enhanced_safety_browsing")
def enable_enhanced_safety_browsing(env: Environment, cfg: dict[str, Any]) -> str | None:
    """``"true"`` when enhanced Safe Browsing is on (``safebrowsing.enhanced``); None without Preferences."""
    prefs = _preferences(env, cfg)
    if prefs is None:
        return None
    return true_false(_get(prefs, "safebrowsing", "enhanced"))


def _local_state(env: Environment, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``Local State`` of the user-data folder that holds the profile (one level above it)."""
    if cfg.get("profile_dir"):
        folders = [posixpath.dirname(str(cfg["profile_dir"]).rstrip("/"))]
    else:
        folders = [posixpath.dirname(profile) for profile in CHROMIUM_PROFILES]
    path = first_existing(env, [posixpath.join(folder, "Local State") for folder in folders])
    data = read_or_none(env, path)
    if data is None:
        return None
    try:
        parsed = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        log.info("%s is not valid JSON: %s", path, exc)
        return None
    return parsed if isinstance(parsed, dict) else None


@getter("enabled_experiments")
def enabled_experiments(env: Environment, cfg: dict[str, Any]) -> list[str]:
    """The chrome://flags entries turned on (``browser.enabled_labs_experiments`` of Local State), ``[]`` if none.

    Entries look like ``flag-name`` or ``flag-name@2`` (the chosen option).
    """
    flags = _get(_local_state(env, cfg), "browser", "enabled_labs_experiments", default=[])
    return list(flags) if isinstance(flags, list) else []


def _extension_settings(env: Environment, cfg: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The per-extension records of ``extensions.settings``, from Preferences and Secure Preferences.

    Chromium on Linux keeps them in Preferences (what OSWorld reads); Chrome builds that enforce
    tamper checks (Windows, macOS) keep them in ``Secure Preferences``. None when neither exists.
    """
    records: dict[str, Any] = {}
    found = False
    for name in ("Preferences", "Secure Preferences"):
        data = _json_file(env, cfg, name)
        if data is None:
            continue
        found = True
        settings = _get(data, "extensions", "settings", default={})
        if isinstance(settings, dict):
            records.update({key: value for key, value in settings.items() if isinstance(value, dict)})
    return list(records.values()) if found else None


@getter("find_unpacked_extension_path")
def find_unpacked_extension_path(env: Environment, cfg: dict[str, Any]) -> list[str] | None:
    """The folder (``path``) of every installed extension; unpacked ones have their absolute path.

    The episode home is written ``/home/user``. Records without a path are skipped (OSWorld
    gave up on the whole list at the first one). None without Preferences.
    """
    records = _extension_settings(env, cfg)
    if records is None:
        return None
    return [record["path"] for record in records if isinstance(record.get("path"), str)]


def _extension_folder_manifest(env: Environment, cfg: dict[str, Any], record: dict[str, Any]) -> Any:
    """The ``manifest.json`` in an extension's folder (absolute, or relative to the profile's Extensions/)."""
    path = record.get("path")
    if not isinstance(path, str) or not path:
        return None
    if not posixpath.isabs(path) and not path.startswith("~"):
        profile = posixpath.dirname(_profile_file(env, cfg, "Preferences"))
        path = posixpath.join(profile, "Extensions", path)
    data = read_or_none(env, posixpath.join(path, "manifest.json"))
    if data is None:
        return None
    try:
        manifest = json.loads(data.decode("utf-8-sig", errors="replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(manifest, dict):
        return None
    name = manifest.get("name")
    match = re.fullmatch(r"__MSG_(\w+)__", name) if isinstance(name, str) else None
    if match and isinstance(manifest.get("default_locale"), str):
        # A localised name: the default locale's message of that key (keys are case-insensitive).
        messages_path = posixpath.join(path, "_locales", manifest["default_locale"], "messages.json")
        try:
            messages = json.loads((read_or_none(env, messages_path) or b"{}").decode("utf-8-sig", errors="replace"))
        except (ValueError, RecursionError):
            messages = {}
        wanted = match.group(1).lower()
        for key, entry in messages.items() if isinstance(messages, dict) else ():
            if key.lower() == wanted and isinstance(entry, dict) and isinstance(entry.get("message"), str):
                manifest = {**manifest, "name": entry["message"]}
    return manifest


@getter("find_installed_extension_name")
def find_installed_extension_name(env: Environment, cfg: dict[str, Any]) -> list[str] | None:
    """The name of every installed extension, or None without Preferences.

    From the ``manifest`` Chromium copied into the preferences record; current Chromium keeps no
    such copy for most extensions (OSWorld then sees none of them), so the name is read from the
    ``manifest.json`` in the extension's folder instead (a ``__MSG_key__`` name in its default
    locale). Extensions whose name cannot be found are skipped.
    """
    records = _extension_settings(env, cfg)
    if records is None:
        return None
    names = []
    for record in records:
        name = _get(record, "manifest", "name")
        if not isinstance(name, str):
            name = _get(_extension_folder_manifest(env, cfg, record), "name")
        if isinstance(name, str):
            names.append(name)
    return names


# Where Chromium keeps the cookie database: the profile folder on Linux (what OSWorld reads);
# Network/ in Windows builds since version 96 (a profile copied from there).
COOKIE_FILES = ("Cookies", "Network/Cookies")


@getter("cookie_data")
def cookie_data(env: Environment, cfg: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """Every row of the profile's ``cookies`` table (all columns, ``host_key`` second), or None.

    The database is copied to ``dest`` (default ``Cookies``) in the cache first, with its
    write-ahead log if it has one. ``Default/Cookies`` (OSWorld's file) is read, else
    ``Default/Network/Cookies``.
    """
    candidates = [_profile_file(env, cfg, name) for name in COOKIE_FILES]
    path = first_existing(env, candidates)
    target = cache_target(env, str(cfg.get("dest") or "Cookies"), "cookie_data")
    data = read_or_none(env, path)
    for sidecar in ("-wal", "-journal"):
        target.with_name(target.name + sidecar).unlink(missing_ok=True)
    if data is None:
        log.info("cookie_data: %s does not exist in the environment", path)
        target.unlink(missing_ok=True)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    wal = read_or_none(env, path + "-wal")
    if wal:
        target.with_name(target.name + "-wal").write_bytes(wal)
    try:
        with closing(sqlite3.connect(target)) as conn:
            return conn.execute("SELECT * FROM cookies").fetchall()
    except sqlite3.Error as exc:
        log.info("cookie_data: reading %s: %s", path, exc)
        return None
