"""Built-in getters: fetch the state a metric compares. Importing this package registers them
(``registry.get_getter`` does so).

A getter is ``(env, cfg) -> value``; a missing file gives None and a config mistake raises
UserError (``base``, which also holds the helpers every getter shares). One module per source:

- ``generic``: files copied out of the environment, command output, directory listings, literal rules;
- ``desktop``: the desktop session (screen, windows, wallpaper, terminal, clipboard, launchers);
- ``dates``: expected dates written as relative phrases (``rule_relativeTime``);
- ``app_config``: application config files (VLC, GIMP, LibreOffice, VS Code);
- ``chrome`` / ``chrome_pages``: the live browser's tabs and pages, through DevTools;
- ``chrome_profile``: Chromium's profile files (Preferences, Bookmarks, History, Cookies…);
- ``web``: gold values read off live web sites;
- ``cloud``: gold files named by URL;
- ``slides``: media placed on a presentation's slide;
- ``waa``: Windows Agent Arena's file getters.
"""

from mcpworld.evaluation.getters import (  # noqa: F401
    app_config,
    base,
    chrome,
    chrome_pages,
    chrome_profile,
    cloud,
    dates,
    desktop,
    generic,
    slides,
    waa,
    web,
)
