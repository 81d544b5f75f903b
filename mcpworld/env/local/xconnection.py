"""One X connection through python-xlib, with its error table repaired.

python-xlib 0.33's RANDR extension registers its three error classes at codes 0, 1 and 2 instead of
at the extension's first error code: every core ``BadRequest``/``BadValue`` then arrives as a
``BadRR…Error`` that is not an ``XError`` and crashes the reader with ``AttributeError:
'BadRRModeError' object has no attribute 'sequence_number'``. Putting the core classes back makes
a BadValue (say, a window that closed between two requests) an ordinary, catchable ``XError``.
"""

from __future__ import annotations

from Xlib import display as xdisplay
from Xlib import error as xerror


def open_display(name: str) -> xdisplay.Display:
    d = xdisplay.Display(name)
    d.display.error_classes.update(xerror.xerror_class)
    return d
