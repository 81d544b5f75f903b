"""Chromium profile getters (Preferences, Local State, Cookies, desktop launchers) and their metrics."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters import chrome
from mcpworld.evaluation.registry import get_getter, get_metric

PROFILE = "~/.config/google-chrome/Default"


def get(env, name: str, **cfg: Any) -> Any:
    return get_getter(name)(env, {"type": name, **cfg})


def score(name: str, result: Any, rules: Any) -> float:
    return get_metric(name)(result, rules)


def write_prefs(env, prefs: dict[str, Any], name: str = "Preferences") -> None:
    env.write(f"{PROFILE}/{name}", json.dumps(prefs))


# ---------------------------------------------------------------------------------------------
# Preferences getters


def test_defaults_without_a_profile(env):
    assert get(env, "default_search_engine") == "Google"
    assert get(env, "profile_name") is None
    assert get(env, "enable_do_not_track") == "false"
    assert get(env, "enable_safe_browsing") == "false"
    assert get(env, "chrome_appearance_mode_ui") == "system"
    assert get(env, "enabled_experiments") == []
    for name in (
        "data_delete_automacally",
        "new_startup_page",
        "enable_enhanced_safety_browsing",
        "find_unpacked_extension_path",
        "find_installed_extension_name",
        "cookie_data",
    ):
        assert get(env, name) is None, name


def test_defaults_with_an_untouched_profile(env):
    write_prefs(env, {"profile": {"name": "Person 1"}, "session": {"restore_on_startup": 1}})
    assert get(env, "default_search_engine") == "Google"
    assert get(env, "profile_name") == "Person 1"
    assert get(env, "data_delete_automacally") == "false"
    assert get(env, "new_startup_page") == "false"
    assert get(env, "enable_enhanced_safety_browsing") == "false"
    assert get(env, "find_installed_extension_name") == []


def test_changed_settings(env):
    write_prefs(
        env,
        {
            "default_search_provider_data": {"template_url_data": {"short_name": "Bing", "keyword": "bing.com"}},
            "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
            "session": {"restore_on_startup": 5},
            "enable_do_not_track": True,
            "safebrowsing": {"enabled": True, "enhanced": False},
        },
    )
    assert get(env, "default_search_engine") == "Bing"
    assert get(env, "profile_name") == "Thomas"
    assert get(env, "data_delete_automacally") == "true"
    assert get(env, "new_startup_page") == "true"
    assert get(env, "enable_do_not_track") == "true"
    assert get(env, "enable_safe_browsing") == "true"
    assert get(env, "enable_enhanced_safety_browsing") == "false"
    assert score("exact_match", get(env, "profile_name"), {"expected": "Thomas"}) == 1


def test_data_delete_ignores_chromiums_own_migration_flags(env):
    write_prefs(env, {"profile": {"default_content_setting_values": {"has_migrated_local_network_access": True}}})
    assert get(env, "data_delete_automacally") == "false"
    write_prefs(env, {"profile": {"default_content_setting_values": {"has_migrated_local_network_access": True, "cookies": 4}}})
    assert get(env, "data_delete_automacally") == "true"


def test_startup_page_without_session_settings_is_the_new_tab_page(env):
    write_prefs(env, {"profile": {}})
    assert get(env, "new_startup_page") == "true"


def test_enhanced_safe_browsing_counts_as_safe_browsing(env):
    write_prefs(env, {"safebrowsing": {"enhanced": True}})
    assert get(env, "enable_safe_browsing") == "true"
    assert get(env, "enable_enhanced_safety_browsing") == "true"


def test_corrupt_preferences_read_as_missing(env):
    env.write(f"{PROFILE}/Preferences", "{not json")
    assert get(env, "default_search_engine") == "Google"
    assert get(env, "new_startup_page") is None


def test_profile_dir_overrides_the_default_profile(env):
    env.write("~/other/Profile 1/Preferences", json.dumps({"profile": {"name": "Work"}}))
    env.write("~/other/Local State", json.dumps({"browser": {"enabled_labs_experiments": ["x@1"]}}))
    assert get(env, "profile_name", profile_dir="~/other/Profile 1") == "Work"
    assert get(env, "enabled_experiments", profile_dir="~/other/Profile 1") == ["x@1"]


@pytest.mark.parametrize(
    "theme, extensions, mode",
    [
        ({"color_scheme2": 2}, {}, "dark"),
        ({"color_scheme2": 1, "color_scheme": 2}, {}, "light"),
        ({"color_scheme": 2}, {}, "dark"),
        ({"color_scheme2": 0}, {}, "system"),
        ({"color_scheme2": "Dark"}, {}, "dark"),
        ({"color_scheme2": 7}, {}, "system"),
        ({"color_scheme2": 2}, {"theme": {"system_theme": 0}}, "light"),
        ({"color_scheme2": 2}, {"theme": {"system_theme": 1}}, "dark"),
    ],
)
def test_appearance_mode(env, theme, extensions, mode):
    write_prefs(env, {"browser": {"theme": theme}, "extensions": extensions})
    assert get(env, "chrome_appearance_mode_ui") == mode


# ---------------------------------------------------------------------------------------------
# extensions


def _extension(path: str, name: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"path": path, "location": 4, "state": 1}
    if name is not None:
        record["manifest"] = {"name": name, "version": "1.0", "manifest_version": 3}
    return record


def test_extension_paths_and_names_from_both_preference_files(env):
    home = str(env.home)
    write_prefs(
        env,
        {
            "extensions": {
                "settings": {
                    "aaa": _extension(f"{home}/Desktop/helloExtension", "Hello Extensions"),
                    "bbb": {"state": 1},  # a record with neither path nor manifest
                }
            }
        },
    )
    write_prefs(
        env,
        {
            "extensions": {
                "settings": {
                    "ccc": _extension("ccc/2.1_0", "Google Translate"),
                    "ddd": _extension("ddd/1.0_0", None),
                }
            }
        },
        name="Secure Preferences",
    )
    paths = get(env, "find_unpacked_extension_path")
    assert sorted(paths) == ["/home/user/Desktop/helloExtension", "ccc/2.1_0", "ddd/1.0_0"]
    assert score("is_in_list", paths, {"expected": "/home/user/Desktop/helloExtension"}) == 1
    names = get(env, "find_installed_extension_name")
    assert sorted(names) == ["Google Translate", "Hello Extensions"]


def test_extension_names_from_the_extension_folders(env):
    # Current Chromium records only the folder of most extensions (no manifest copy).
    home = str(env.home)
    write_prefs(
        env,
        {
            "extensions": {
                "settings": {
                    "aaa": _extension(f"{home}/Desktop/helloExtension", None),
                    "bbb": _extension("bbb/3.2_0", None),
                    "ccc": _extension("ccc/1.0_0", None),  # its folder is gone
                }
            }
        },
    )
    env.write("~/Desktop/helloExtension/manifest.json", json.dumps({"name": "Hello Extensions", "version": "1"}))
    store = f"{PROFILE}/Extensions/bbb/3.2_0"
    env.write(f"{store}/manifest.json", json.dumps({"name": "__MSG_appName__", "default_locale": "en"}))
    env.write(f"{store}/_locales/en/messages.json", json.dumps({"APPNAME": {"message": "Momentum"}}))
    assert sorted(get(env, "find_installed_extension_name")) == ["Hello Extensions", "Momentum"]


def test_is_expected_installed_extensions():
    installed = ["Zoom Chrome Extension", "Momentum", "Google Translate"]
    name = "is_expected_installed_extensions"
    assert score(name, installed, {"expected": ["Zoom for Google Chrome", "Momentum"]}) == 1
    assert score(name, installed, {"expected": ["Momentum", "React Developer Tools"]}) == 0
    assert score(name, [], {"expected": []}) == 0
    assert score(name, None, {"expected": ["Momentum"]}) == 0
    with pytest.raises(UserError, match="expected"):
        score(name, installed, {"expected": "Momentum"})


def test_is_extension_installed():
    name = "is_extension_installed"
    assert score(name, "ms-python.python\n", {"type": "contain", "expected": "ms-python.python"}) == 1
    assert score(name, "", {"type": "contain", "expected": "ms-python.python"}) == 0
    assert score(name, "a.txt\n", {"type": "not_contain", "expected": "ToDoLists"}) == 1
    assert score(name, "ToDoLists\n", {"type": "not_contain", "expected": "ToDoLists"}) == 0
    assert score(name, None, {"type": "not_contain", "expected": "ToDoLists"}) == 0
    with pytest.raises(UserError, match="type"):
        score(name, "x", {"type": "regex", "expected": "x"})


# ---------------------------------------------------------------------------------------------
# Local State: chrome://flags


def test_enabled_experiments(env):
    env.write(
        "~/.config/google-chrome/Local State",
        json.dumps({"browser": {"enabled_labs_experiments": ["show-performance-metrics-hud@1", "smooth-scrolling@2"]}}),
    )
    flags = get(env, "enabled_experiments")
    assert flags == ["show-performance-metrics-hud@1", "smooth-scrolling@2"]
    name = "check_enabled_experiments"
    assert score(name, flags, {"type": "names", "names": ["show-performance-metrics-hud", "smooth-scrolling"]}) == 1
    assert score(name, flags, {"type": "names", "names": ["smooth-scrolling", "show-performance-metrics-hud"]}) == 0
    assert score(name, flags, {"type": "names", "names": ["show-performance-metrics-hud"]}) == 0
    assert score(name, None, {"type": "names", "names": []}) == 0
    with pytest.raises(UserError, match="type"):
        score(name, flags, {"type": "ids", "names": []})


# ---------------------------------------------------------------------------------------------
# cookies

COOKIE_COLUMNS = (
    "creation_utc INTEGER NOT NULL, host_key TEXT NOT NULL, top_frame_site_key TEXT NOT NULL, "
    "name TEXT NOT NULL, value TEXT NOT NULL, encrypted_value BLOB NOT NULL, path TEXT NOT NULL, "
    "expires_utc INTEGER NOT NULL, is_secure INTEGER NOT NULL, is_httponly INTEGER NOT NULL, "
    "last_access_utc INTEGER NOT NULL, has_expires INTEGER NOT NULL, is_persistent INTEGER NOT NULL, "
    "priority INTEGER NOT NULL, samesite INTEGER NOT NULL, source_scheme INTEGER NOT NULL, "
    "source_port INTEGER NOT NULL, last_update_utc INTEGER NOT NULL, source_type INTEGER NOT NULL, "
    "has_cross_site_ancestor INTEGER NOT NULL"
)


def write_cookies(env, relative: str, hosts: list[str]) -> None:
    path = env.resolve(f"{PROFILE}/{relative}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"CREATE TABLE cookies ({COOKIE_COLUMNS})")
        for i, host in enumerate(hosts):
            db.execute(
                "INSERT INTO cookies VALUES (?,?,'',?,'v',x'',?,0,1,0,0,1,1,1,0,2,443,0,0,0)",
                (13_300_000_000_000_000 + i, host, f"c{i}", "/"),
            )
        db.commit()


def test_cookie_data_reads_the_linux_database_first(env):
    write_cookies(env, "Network/Cookies", [".windows.example"])
    write_cookies(env, "Cookies", [".amazon.com", "www.google.com"])
    rows = get(env, "cookie_data", dest="Cookies")
    assert [row[1] for row in rows] == [".amazon.com", "www.google.com"]
    assert len(rows[0]) == 20
    assert (env.cache_dir / "Cookies").is_file()
    rules = {"type": "domains", "domains": [".amazon.com"]}
    assert score("is_cookie_deleted", rows, rules) == 0


def test_cookie_data_from_a_windows_profile_layout(env):
    write_cookies(env, "Network/Cookies", ["www.google.com", "smile.amazon.com"])
    rows = get(env, "cookie_data")
    assert [row[1] for row in rows] == ["www.google.com", "smile.amazon.com"]
    # OSWorld's URL comparison: another subdomain is another site
    assert score("is_cookie_deleted", rows, {"type": "domains", "domains": [".amazon.com"]}) == 1
    for host in ("amazon.com", "www.amazon.com"):
        assert score("is_cookie_deleted", [(0, host)], {"type": "domains", "domains": [".amazon.com"]}) == 0


def test_cookie_data_of_a_file_that_is_no_database(env):
    env.write(f"{PROFILE}/Network/Cookies", "not sqlite")
    assert get(env, "cookie_data") is None


def test_is_cookie_deleted_edge_cases():
    rules = {"type": "domains", "domains": [".amazon.com"]}
    assert score("is_cookie_deleted", [], rules) == 1
    assert score("is_cookie_deleted", None, rules) == 0
    with pytest.raises(UserError, match="type"):
        score("is_cookie_deleted", [], {"type": "names", "domains": []})


# ---------------------------------------------------------------------------------------------
# desktop launchers

LAUNCHER = """#!/usr/bin/env xdg-open
[Desktop Entry]
Version=1.0
Terminal=false
Type=Application
Name=Play 2048 Game Online
Comment=Play Puzzle Game 2048. Use your arrow keys to move the tiles.
Exec=/opt/google/chrome/google-chrome --profile-directory=Default --app-id=abcdef
Icon=chrome-abcdef-Default
"""


def test_shortcuts_on_desktop(env):
    assert get(env, "shortcuts_on_desktop") == {}
    env.write("~/Desktop/chrome-abcdef-Default.desktop", LAUNCHER)
    env.write("~/Desktop/notes.txt", "Name=Play 2048 Game Online\n")
    shortcuts = get(env, "shortcuts_on_desktop")
    assert shortcuts == {"chrome-abcdef-Default.desktop": LAUNCHER}


@pytest.mark.parametrize(
    "rules, expected",
    [
        ({"type": "name", "name": "Play 2048 Game Online"}, 1),
        ({"type": "name", "name": "play 2048 game online - the official site"}, 1),
        ({"type": "name", "name": "2048"}, 1),
        ({"type": "name", "name": "Play Puzzle Game 2048"}, 0),
        ({"type": "exec", "exec": "/opt/google/chrome/google-chrome --profile-directory=Default --app-id=abcdef"}, 1),
        ({"type": "exec", "exec": "--APP-ID=abcdef"}, 0),
        ({"type": "description", "description": "Play Puzzle Game 2048."}, 1),
        ({"type": "description", "description": "Tetris"}, 0),
    ],
)
def test_is_shortcut_on_desktop(rules, expected):
    assert score("is_shortcut_on_desktop", {"a.desktop": LAUNCHER}, rules) == expected


def test_is_shortcut_on_desktop_edge_cases():
    # as in OSWorld an empty value is contained in any name and matches
    empty_name = "[Desktop Entry]\nName=\nExec=\n"
    assert score("is_shortcut_on_desktop", {"a.desktop": empty_name}, {"type": "name", "name": "2048"}) == 1
    assert score("is_shortcut_on_desktop", {"a.desktop": empty_name}, {"type": "exec", "exec": "x"}) == 1
    # "Name=<name>\n" anywhere counts (GenericName= too), as in OSWorld
    generic = "[Desktop Entry]\nGenericName=Play 2048\nName=Other\n"
    assert score("is_shortcut_on_desktop", {"a.desktop": generic}, {"type": "name", "name": "Play 2048"}) == 1
    waa = json.dumps({"data": {"description": "Play Puzzle Game 2048. Use your arrow keys."}})
    assert score("is_shortcut_on_desktop", {"a.lnk": waa}, {"type": "description", "description": "Game 2048"}) == 1
    assert score("is_shortcut_on_desktop", None, {"type": "name", "name": "2048"}) == 0
    assert score("is_shortcut_on_desktop", {}, {"type": "name", "name": "2048"}) == 0
    with pytest.raises(UserError, match="type"):
        score("is_shortcut_on_desktop", {}, {"type": "url", "url": "x"})


# ---------------------------------------------------------------------------------------------
# active tab URL parts (the live URL is replaced by a fixed one)


@pytest.fixture
def active_url(monkeypatch):
    def use(url: str | None) -> None:
        monkeypatch.setattr(chrome, "active_url_from_access_tree", lambda env, cfg: url)

    return use


def test_url_dash_part(env, active_url):
    active_url("https://www.drugs.com/tamiflu.html#side-effects")
    cfg = {"partIndex": -1, "needDeleteId": False, "returnType": "string"}
    assert get(env, "url_dashPart", **cfg) == "tamiflu.html#side-effects"
    active_url("https://www.accuweather.com/en/gb/manchester/m15-6/november-weather/329260")
    assert get(env, "url_dashPart", partIndex=-2, returnType="json", key="time") == {"time": "november-weather"}
    assert get(env, "url_dashPart", partIndex=2, returnType="string") == "www.accuweather.com"
    assert get(env, "url_dashPart", partIndex=20, returnType="string") is None
    assert get(env, "url_dashPart", partIndex=-20, returnType="string") is None
    active_url("https://example.com/item?id=42")
    assert get(env, "url_dashPart", partIndex=3, needDeleteId=True, returnType="string") == "item"
    assert get(env, "url_dashPart", partIndex=3, returnType="string") == "item?id=42"
    active_url(None)
    assert get(env, "url_dashPart", partIndex=-1, returnType="string") is None


def test_url_dash_part_config_errors(env, active_url):
    active_url("https://example.com/a")
    with pytest.raises(UserError, match="partIndex"):
        get(env, "url_dashPart", partIndex="last", returnType="string")
    with pytest.raises(UserError, match="returnType"):
        get(env, "url_dashPart", partIndex=1, returnType="list")
    with pytest.raises(UserError, match="key"):
        get(env, "url_dashPart", partIndex=1, returnType="json")


MACYS_KEYS = ["mens_clothing", "shirts", "Men_regular_size_t", "Price_discount_range", "short_sleeve"]


def test_url_path_parse_of_a_filtered_listing(env, active_url):
    active_url(
        "https://www.macys.com/shop/mens-clothing/mens-casual-shirts/"
        "Men_regular_size_t,Price_discount_range,Sleeve_length/L,50_PERCENT_%20off%20%26%20more,"
        "Short%20Sleeve?id=20627"
    )
    result = get(env, "url_path_parse", parse_keys=MACYS_KEYS)
    assert result == {
        "mens_clothing": True,
        "shirts": True,
        "short_sleeve": True,
        "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more",
    }
    expected = dict(result)
    assert score("check_direct_json_object", result, {"expected": expected}) == 1


def test_url_path_parse_of_other_listings(env, active_url):
    active_url(
        "https://www.macys.com/shop/womens-clothing/Price_discount_range,Product_department/"
        "50_PERCENT_%20off%20%26%20more|30_PERCENT_%20off%20%26%20more,Shirts"
    )
    result = get(env, "url_path_parse", parse_keys=MACYS_KEYS)
    assert result == {
        "mens_clothing": None,
        "shirts": True,
        "short_sleeve": None,
        "Men_regular_size_t": None,
        "Price_discount_range": "not_50_PERCENT_ off & more",
    }
    active_url("https://www.macys.com/shop/mens-clothing")
    assert get(env, "url_path_parse", parse_keys=["Sleeve_length", "Price_discount_range"]) == {
        "mens_clothing": True,
        "shirts": None,
        "short_sleeve": None,
        "Price_discount_range": "not_50_PERCENT_ off & more",
    }
    active_url(None)
    assert get(env, "url_path_parse", parse_keys=MACYS_KEYS) is None
    with pytest.raises(UserError, match="parse_keys"):
        get(env, "url_path_parse")


# ---------------------------------------------------------------------------------------------
# tab metrics


def test_is_expected_active_tab_approximate():
    name = "is_expected_active_tab_approximate"
    rules = {"type": "url", "url": "chrome://password-manager/passwords"}
    assert score(name, "chrome://password-manager/passwords?search=x", rules) == 1
    assert score(name, {"url": "chrome://password-manager/passwords", "title": "t"}, rules) == 1
    assert score(name, "chrome://password-manager/settings", rules) == 0
    assert score(name, "https://www.example.com/a?x=1", {"type": "url", "url": "https://example.com/a"}) == 0
    assert score(name, None, rules) == 0
    assert score(name, "", rules) == 0
    with pytest.raises(UserError, match="type"):
        score(name, "x", {"type": "title", "url": "x"})


def test_is_added_to_steam_cart():
    name = "is_added_to_steam_cart"
    rules = {"items": ["The Dota 2 Official Soundtrack"]}
    page = {
        "title": "Shopping Cart",
        "url": "https://store.steampowered.com/cart/",
        "content": "<div class='cart_item'>The Dota 2 Official Soundtrack</div>",
    }
    assert score(name, page, rules) == 1
    assert score(name, {**page, "content": "<div>Your cart is empty</div>"}, rules) == 0
    assert score(name, None, rules) == 0
    with pytest.raises(UserError, match="items"):
        score(name, page, {})
