"""OSWorld's functions raise on files they cannot read; OSWorld's task then errors and scores 0."""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any

from mcpworld.core.errors import UserError

log = logging.getLogger(__name__)


def zero_on_crash(fn: Any) -> Any:
    """Score 0 where OSWorld's function would raise on the agent's file (its task then errors).

    A call with options the function does not take still raises TypeError, as in OSWorld; a task
    author's mistake (UserError) still says so.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> float:
        signature.bind(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except UserError:
            raise
        except Exception as exc:
            log.debug("%s: %s", fn.__name__, exc)
            return 0.0

    return wrapper
