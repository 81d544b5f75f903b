"""The first-start files a program's warm layer carries (env/local/environment.py:warm_layer), made on a scratch
desktop: LibreOffice's keep every golden setting and add the build its extension caches were checked
against, so a later start does not re-register the bundled extensions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.env.local.environment import warm_layer

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

SETTINGS = ".config/libreoffice/4/user/registrymodifications.xcu"


def test_libreoffice_warm_layer_keeps_the_golden_settings(tmp_path: Path) -> None:
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed (make apps)")
    catalog = programs()
    calc = next(p for p in catalog if p.app == "libreoffice_calc")
    assert calc.profile is not None and ".config/libreoffice/4/user" in calc.warm
    layer = warm_layer(calc, catalog, root=tmp_path)
    assert layer is not None and layer.parent == tmp_path
    assert (layer / ".config/libreoffice/4/user/extensions").is_dir()  # the bundled extensions, registered
    warm = (layer / SETTINGS).read_text(encoding="utf-8")
    golden = (calc.profile / SETTINGS).read_text(encoding="utf-8")
    for setting in ("FirstStartWizardCompleted", "StartWithTemplate", "ShowTipOfTheDay"):
        assert f'oor:name="{setting}"' in golden and f'oor:name="{setting}"' in warm
    assert 'oor:name="LastCompatibilityCheckID"' in warm  # what spares the next start the check
    assert warm_layer(calc, catalog, root=tmp_path) == layer  # made once, then reused
