"""Metrics over application state files, one module per application: GIMP gimprc (``gimp``), VLC
vlcrc and status (``vlc``), LibreOffice xcu (``libreoffice``), VS Code JSON (``vscode``),
Chromium profile files (``chromium``), Thunderbird profile files (``thunderbird``), and a
directory listing (``directory``). Importing this package registers them.

Each metric reads one settings file (a local copy made by a getter) and checks one setting.
A ``None`` path, a missing file or a file that cannot be parsed scores 0. A settings key the app
never wrote means "default" only where the metric says so; otherwise it scores 0 (the task asked
for a change). A malformed rules object raises UserError naming the metric and the key.
"""

import mcpworld.evaluation.metrics.appstate.chromium
import mcpworld.evaluation.metrics.appstate.directory
import mcpworld.evaluation.metrics.appstate.gimp
import mcpworld.evaluation.metrics.appstate.libreoffice
import mcpworld.evaluation.metrics.appstate.thunderbird
import mcpworld.evaluation.metrics.appstate.vlc
import mcpworld.evaluation.metrics.appstate.vscode  # noqa: F401
