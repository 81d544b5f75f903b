"""``python -m mcpworld.evaluation TASK_FILE --home DIR``: grade a directory standing in for the
episode's home (``~`` and ``/home/user`` map to DIR) and print the verdict as JSON.

Exit 0 whatever the score; 2 with one line for an invalid task file or a missing directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mcpworld.core.errors import UserError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.evaluation", description=__doc__.splitlines()[0])
    parser.add_argument("task_file", type=Path, nargs="?", help="task.yaml, an OSWorld/WAA .json or an MCPWorld config.json")
    parser.add_argument("--home", type=Path, help="directory standing in for the episode's home")
    parser.add_argument("--list", action="store_true", help="list every getter and metric with what it expects")
    parser.add_argument(
        "--final-action", default="DONE", choices=["DONE", "FAIL"], help="how the agent ended (matters for infeasible tasks)"
    )
    parser.add_argument("--threshold", type=float, default=1.0, help="score that counts as success")
    parser.add_argument("--toolathlon-root", help="a Toolathlon checkout (as toolathlon.root=)")
    parser.add_argument("--toolathlon-python", help="the graders' interpreter (as toolathlon.python=)")
    parser.add_argument("--toolathlon-lang", default="en", choices=["en", "cn"], help="as toolathlon.lang=")
    parser.add_argument("--pccanary-root", help="a PC-Canary checkout (as pccanary.root=)")
    args = parser.parse_args(argv)
    if args.list:
        from mcpworld.evaluation.registry import describe

        for kind, name, doc in describe():
            print(f"{kind:<7} {name:<45} {doc}")
        return 0
    if args.task_file is None or args.home is None:
        parser.error("TASK_FILE and --home are required (or --list)")

    from mcpworld.evaluation.standalone import grade
    from mcpworld.tasks.load import load_task_file
    from mcpworld.tasks.settings import LoaderSettings, PcCanarySettings, ToolathlonSettings, as_path

    try:
        settings = LoaderSettings(
            toolathlon=ToolathlonSettings(
                root=as_path(args.toolathlon_root), python=args.toolathlon_python, lang=args.toolathlon_lang, claim_done=True
            ),
            pccanary=PcCanarySettings(root=as_path(args.pccanary_root)),
        )
        if not args.home.is_dir():
            raise UserError(f"--home {args.home} is not a directory")
        verdict = grade(load_task_file(args.task_file, settings=settings), args.home, args.final_action, args.threshold)
    except UserError as exc:
        print(f"mcpworld.evaluation: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(verdict, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
