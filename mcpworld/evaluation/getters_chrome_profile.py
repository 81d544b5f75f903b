"""Chromium settings read from the profile's files: OSWorld's Preferences/Local State/Cookies getters.

Every getter is ``(env, cfg) -> value`` and needs no running browser: it reads the Default
profile (``~/.config/google-chrome/Default`` or the other Chromium locations of
``getters_apps.CHROMIUM_PROFILES``; ``profile_dir`` overrides) through the Environment. Values
and their shapes are OSWorld's, including its string booleans (``"true"``/``"false"``) and the
value it gives when a key is absent (Chromium stores only settings that differ from its default).

Where OSWorld answers a missing or unreadable Preferences file with the unrelated string
``"Google"`` (new_startup_page, enable_enhanced_safety_browsing, data_delete_automacally, the
extension lists), these getters give None instead: both fail every task's expected value, and
None says "nothing to read".

Chromium writes Preferences some seconds after a change (and on exit); the OSWorld tasks that
read them restart the browser in a postconfig step first, so the file is current.

``url_dashPart`` and ``url_path_parse`` parse the active tab's URL, read from the live browser by
``getters_chrome.active_url_from_access_tree``.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters import cache_target, require
from mcpworld.evaluation.getters_apps import (
    CHROMIUM_PROFILES,
    _first_existing,
    _profile_file,
    _profile_json,
    _read,
    canonical_home,
)
from mcpworld.evaluation.getters_chrome import active_url_from_access_tree
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


def _json_file(env: "Environment", cfg: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A profile JSON file as a dict; None when it is absent or not a JSON object (logged)."""
    try:
        data = _profile_json(env, cfg, name)
    except ValueError as exc:
        log.info("%s", exc)
        return None
    return data if isinstance(data, dict) else None


def _preferences(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any] | None:
    return _json_file(env, cfg, "Preferences")


def _get(data: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


def _flag(value: Any) -> str:
    return "true" if value else "false"


@getter("default_search_engine")
def default_search_engine(env: "Environment", cfg: dict[str, Any]) -> str:
    """Short name of the default search engine; ``"Google"`` (Chromium's default) when none is stored."""
    prefs = _preferences(env, cfg)
    return _get(prefs, "default_search_provider_data", "template_url_data", "short_name", default="Google")


@getter("profile_name")
def profile_name(env: "Environment", cfg: dict[str, Any]) -> Any:
    """The profile's name (``profile.name``), or None."""
    return _get(_preferences(env, cfg), "profile", "name")


@getter("data_delete_automacally")
def data_delete_automacally(env: "Environment", cfg: dict[str, Any]) -> str | None:
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
        return _flag(any(not str(key).startswith("has_migrated") for key in defaults))
    return _flag(defaults is not None)


COLOR_SCHEMES = {"system": "system", "default": "system", "0": "system", "light": "light", "1": "light",
                 "dark": "dark", "2": "dark"}


@getter("chrome_appearance_mode_ui")
def chrome_appearance_mode_ui(env: "Environment", cfg: dict[str, Any]) -> str:
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
def new_startup_page(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """``"true"`` when Chromium starts on the New Tab page (no ``session`` settings, or restore_on_startup 5)."""
    prefs = _preferences(env, cfg)
    if prefs is None:
        return None
    if "session" not in prefs:
        return "true"
    return _flag(_get(prefs, "session", "restore_on_startup") == RESTORE_NEW_TAB_PAGE)


@getter("enable_do_not_track")
def enable_do_not_track(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when "Send a Do Not Track request" is on, else ``"false"`` (also without Preferences)."""
    return _flag(_get(_preferences(env, cfg), "enable_do_not_track"))


@getter("enable_safe_browsing")
def enable_safe_browsing(env: "Environment", cfg: dict[str, Any]) -> str:
    """``"true"`` when standard or enhanced Safe Browsing is stored as on, else ``"false"``."""
    safebrowsing = _get(_preferences(env, cfg), "safebrowsing", default={})
    if not isinstance(safebrowsing, dict):
        return "false"
    return _flag(safebrowsing.get("enhanced") or safebrowsing.get("enabled"))


@getter("enable_enhanced_safety_browsing")
def enable_enhanced_safety_browsing(env: "Environment", cfg: dict[str, Any]) -> str | None:
    """``"true"`` when enhanced Safe Browsing is on (``safebrowsing.enhanced``); None without Preferences."""
    prefs = _preferences(env, cfg)
    if prefs is None:
        return None
    return _flag(_get(prefs, "safebrowsing", "enhanced"))


def _local_state(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``Local State`` of the user-data folder that holds the profile (one level above it)."""
    if cfg.get("profile_dir"):
        folders = [posixpath.dirname(str(cfg["profile_dir"]).rstrip("/"))]
    else:
        folders = [posixpath.dirname(profile) for profile in CHROMIUM_PROFILES]
    path = _first_existing(env, [posixpath.join(folder, "Local State") for folder in folders])
    data = _read(env, path)
    if data is None:
        return None
    try:
        parsed = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        log.info("%s is not valid JSON: %s", path, exc)
        return None
    return parsed if isinstance(parsed, dict) else None


@getter("enabled_experiments")
def enabled_experiments(env: "Environment", cfg: dict[str, Any]) -> list[str]:
    """The chrome://flags entries turned on (``browser.enabled_labs_experiments`` of Local State), ``[]`` if none.

    Entries look like ``flag-name`` or ``flag-name@2`` (the chosen option).
    """
    flags = _get(_local_state(env, cfg), "browser", "enabled_labs_experiments", default=[])
    return list(flags) if isinstance(flags, list) else []


def _extension_settings(env: "Environment", cfg: dict[str, Any]) -> list[dict[str, Any]] | None:
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
def find_unpacked_extension_path(env: "Environment", cfg: dict[str, Any]) -> list[str] | None:
    """The folder (``path``) of every installed extension; unpacked ones have their absolute path.

    The episode home is written ``/home/user``. Records without a path are skipped (OSWorld
    gave up on the whole list at the first one). None without Preferences.
    """
    records = _extension_settings(env, cfg)
    if records is None:
        return None
    return [record["path"] for record in records if isinstance(record.get("path"), str)]


def _extension_folder_manifest(env: "Environment", cfg: dict[str, Any], record: dict[str, Any]) -> Any:
    """The ``manifest.json`` in an extension's folder (absolute, or relative to the profile's Extensions/)."""
    path = record.get("path")
    if not isinstance(path, str) or not path:
        return None
    if not posixpath.isabs(path) and not path.startswith("~"):
        profile = posixpath.dirname(_profile_file(env, cfg, "Preferences"))
        path = posixpath.join(profile, "Extensions", path)
    data = _read(env, posixpath.join(path, "manifest.json"))
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
            messages = json.loads((_read(env, messages_path) or b"{}").decode("utf-8-sig", errors="replace"))
        except (ValueError, RecursionError):
            messages = {}
        wanted = match.group(1).lower()
        for key, entry in messages.items() if isinstance(messages, dict) else ():
            if key.lower() == wanted and isinstance(entry, dict) and isinstance(entry.get("message"), str):
                manifest = {**manifest, "name": entry["message"]}
    return manifest


@getter("find_installed_extension_name")
def find_installed_extension_name(env: "Environment", cfg: dict[str, Any]) -> list[str] | None:
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
def cookie_data(env: "Environment", cfg: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """Every row of the profile's ``cookies`` table (all columns, ``host_key`` second), or None.

    The database is copied to ``dest`` (default ``Cookies``) in the cache first, with its
    write-ahead log if it has one. ``Default/Cookies`` (OSWorld's file) is read, else
    ``Default/Network/Cookies``.
    """
    candidates = [_profile_file(env, cfg, name) for name in COOKIE_FILES]
    path = _first_existing(env, candidates)
    target = cache_target(env, str(cfg.get("dest") or "Cookies"), "cookie_data")
    data = _read(env, path)
    for sidecar in ("-wal", "-journal"):
        target.with_name(target.name + sidecar).unlink(missing_ok=True)
    if data is None:
        log.info("cookie_data: %s does not exist in the environment", path)
        target.unlink(missing_ok=True)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    wal = _read(env, path + "-wal")
    if wal:
        target.with_name(target.name + "-wal").write_bytes(wal)
    try:
        with closing(sqlite3.connect(target)) as conn:
            return conn.execute("SELECT * FROM cookies").fetchall()
    except sqlite3.Error as exc:
        log.info("cookie_data: reading %s: %s", path, exc)
        return None


SHORTCUT_SUFFIX = ".desktop"


@getter("shortcuts_on_desktop")
def shortcuts_on_desktop(env: "Environment", cfg: dict[str, Any]) -> dict[str, str]:
    """``{file name: text}`` of every ``.desktop`` launcher in ``~/Desktop`` (``{}`` when there is none)."""
    try:
        names = env.list_dir("~/Desktop")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    shortcuts = {}
    for name in names:
        if not name.endswith(SHORTCUT_SUFFIX):
            continue
        data = _read(env, f"~/Desktop/{name}")
        if data is not None:
            shortcuts[name] = canonical_home(env, data).decode("utf-8", errors="replace")
    return shortcuts


@getter("url_dashPart")
def url_dash_part(env: "Environment", cfg: dict[str, Any]) -> Any:
    """One ``/``-separated part of the active tab's URL (``partIndex``, negative counts from the end).

    ``needDeleteId: true`` drops a ``?query`` from the part. ``returnType``: ``string`` gives the
    part, ``json`` gives ``{key: part}``. None when no browser answers or the URL has no such part.
    """
    index = require(cfg, "partIndex")
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise UserError(f"getter 'url_dashPart': partIndex must be an integer, got {index!r}") from None
    return_type = require(cfg, "returnType")
    if return_type not in ("string", "json"):
        raise UserError(f"getter 'url_dashPart': returnType must be 'string' or 'json', got {return_type!r}")
    key = require(cfg, "key") if return_type == "json" else None
    url = active_url_from_access_tree(env, cfg)
    if url is None:
        return None
    parts = url.split("/")
    if not -len(parts) <= index < len(parts):
        log.info("url_dashPart: %s has no part %d", url, index)
        return None
    part = parts[index]
    if cfg.get("needDeleteId"):
        part = part.split("?")[0]
    return part if return_type == "string" else {key: part}


# Macy's encodes filters as a path pair "/Key1,Key2/Value1,Value2"; OSWorld's task asks for
# these fields (always present, None when the URL lacks them).
MACYS_FIELDS = ("Men_regular_size_t", "Price_discount_range")
FIFTY_OFF = "50_PERCENT_ off & more"
SMALLER_DISCOUNTS = ("30_PERCENT_ off & more", "20_PERCENT_ off & more")


@getter("url_path_parse")
def url_path_parse(env: "Environment", cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The filters of a Macy's product-listing URL in the active tab (OSWorld's one use), or None.

    Always ``mens_clothing`` (True when a path part starts with ``mens-clothing``; OSWorld's
    substring test also took ``womens-clothing``), ``shirts`` (True for a
    ``shirts`` path or department Shirts), ``short_sleeve`` (True for ``short-sleeve`` in the path
    or as Sleeve_length); each is None otherwise. Plus, for each of ``parse_keys`` found among
    the filters (Men_regular_size_t and Price_discount_range always are, None when unset), its
    value; Price_discount_range is reported as ``"50_PERCENT_ off & more"`` only when that is the
    sole discount chosen, else ``"not_50_PERCENT_ off & more"``.
    """
    keys = require(cfg, "parse_keys")
    if not isinstance(keys, list):
        raise UserError(f"getter 'url_path_parse': parse_keys must be a list, got {keys!r}")
    url = active_url_from_access_tree(env, cfg)
    if url is None:
        return None
    path = unquote(urlparse(url).path)
    parts = path.strip("/").split("/")
    filters: dict[str, Any] = {}
    shirts = "shirts" in path
    short_sleeve = "short-sleeve" in path
    for names, values in zip(parts, parts[1:]):
        if "," in names and "," in values:
            for name, value in zip((n.strip() for n in names.split(",")), (v.strip() for v in values.split(","))):
                if name == "Price_discount_range":
                    filters[name] = [item.strip() for item in value.split("|")] if value else None
                else:
                    filters[name] = value or None
                shirts = shirts or (name == "Product_department" and value in ("shirts", "Shirts", "Shirt"))
                short_sleeve = short_sleeve or (name == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"))
            break  # only the first filter pair counts
    for field in MACYS_FIELDS:
        filters.setdefault(field, None)
    result: dict[str, Any] = {
        "mens_clothing": True if re.search(r"(^|/)mens-clothing", path) else None,
        "shirts": True if shirts else None,
        "short_sleeve": True if short_sleeve else None,
    }
    for key in keys:
        if key not in filters:
            continue
        if key == "Price_discount_range":
            chosen = filters[key] or []
            only_fifty = FIFTY_OFF in chosen and not any(d in chosen for d in SMALLER_DISCOUNTS)
            result[key] = FIFTY_OFF if only_fifty else "not_" + FIFTY_OFF
        else:
            result[key] = filters[key]
    return result
