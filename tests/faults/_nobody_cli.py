"""Child process of the permission tests: ``kbgraph`` commands run by a user who cannot read
part of their own index (root reads everything whatever its mode).

    _nobody_cli.py WARM FOLDER STEPS_JSON

As root, the child first runs every command once on WARM (so that every module it needs is
imported while the interpreter's own folders are open to it), then drops to ``nobody``,
who owns FOLDER, and runs STEPS on it: ``["kbgraph", arg, ...]`` (FOLDER standing for the
folder), ``["chmod", "index" | "generation", mode]`` (the index folder, or its live
generation), ``["write", rel, text]`` (a document). Prints one JSON list:
``{code, stdout, stderr}`` per command."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kbgraph.cli import main

NOBODY = 65534
WARM_COMMANDS = (
    ["index", "FOLDER", "--embedding", "fake", "--quiet"],
    ["search", "FOLDER", "retry", "--json"],
    ["stats", "FOLDER", "--validate"],
    ["versions", "FOLDER"],
)


def _kbgraph(args: list[str], folder: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, [str(folder) if a == "FOLDER" else a for a in args])
    return {"code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}


def _chmod(what: str, mode: int, folder: Path) -> None:
    index = folder / ".kbgraph"
    target = index
    if what == "generation":
        target = index / (index / "CURRENT").read_text().strip()
    target.chmod(mode)


def run(folder: Path, steps: list[list[Any]]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        if step[0] == "chmod":
            _chmod(step[1], int(step[2], 8), folder)
        elif step[0] == "write":
            (folder / step[1]).write_text(step[2])
        else:
            out.append(_kbgraph(step[1:], folder))
    return out


def main_(warm: Path, folder: Path, steps: list[list[Any]]) -> None:
    if os.geteuid() == 0:
        run(warm, [["kbgraph", *args] for args in WARM_COMMANDS])
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    print(json.dumps(run(folder, steps)))


if __name__ == "__main__":
    main_(Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3]))
