"""Error kinds that decide how a failure is reported and counted.

UserError: something the user can fix (bad config, bad task file, missing app); printed as one line.
InfraError: the environment or an endpoint failed; the episode is ``infra_error``, never a task failure.
EvalError: the task's own grader or handler gave no verdict; the episode is ``eval_error``, never a task failure.
"""


class UserError(Exception):
    """A mistake in the user's input; the message names the file/key and the fix."""


class TaskFileError(UserError):
    """A task file that cannot be loaded."""


class InfraError(Exception):
    """The environment or an endpoint failed; not the agent's fault."""


class Unwatchable(InfraError):
    """A task's app hooks cannot watch this build of its app (a symbol only the authors' own build
    has): the same on every try, so the episode is not run again."""


class EndpointUnreachable(InfraError):
    """A model endpoint that cannot be reached at all; further episodes would fail the same way."""


class MissingWindow(InfraError):
    """A step wanted a window that is not there (to activate or close). In an evaluator's postconfig
    that is often the agent's doing (it closed the app), which OSWorld's setup controller logs and
    carries on from; anywhere else the environment failed."""


class EvalError(Exception):
    """A task's grader or handler could not give a verdict (it failed to import, has a syntax error,
    ran on an unsuitable interpreter, timed out, printed no verdict). The message names the cause
    whole. Not an InfraError: running the episode again would not help, fixing the grader would."""
