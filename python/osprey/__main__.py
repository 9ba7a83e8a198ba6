"""``python -m osprey``: the ``osprey`` command-line tool (convert | run | info | backends).

The package carries the same ``osprey`` executable that the CMake build makes; this module
runs it with the given arguments, so both behave identically.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import List, Optional


def cli_path() -> str:
    """The path of the ``osprey`` executable inside the installed package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "osprey")


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the CLI with ``argv`` (default: this process's arguments) and returns its exit code.

    Called without arguments on POSIX it replaces this process with the CLI, so signals and
    output go straight to it.
    """
    exe = cli_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("error: the osprey executable is missing from the package (%s); "
                         "reinstall with `pip install .`\n" % exe)
        return 1
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None and os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, ["osprey"] + args)
    return subprocess.call([exe] + args)


if __name__ == "__main__":
    sys.exit(main())
