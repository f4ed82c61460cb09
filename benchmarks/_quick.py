"""``--quick``, the smoke run of every published benchmark command (issue 43): the same code
path to the printed report on tiny inputs (a few documents, queries and repetitions, no
download), run by tests/integration/test_bench_commands*.py so that none breaks unseen.
The figures it prints mean nothing."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

HELP = "smoke run on tiny inputs, seconds (CI runs it); its figures mean nothing"


def add_quick(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help=HELP)


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None, **small: Any
) -> argparse.Namespace:
    """``parser``'s arguments and ``--quick``; under ``--quick`` each argument named in
    ``small`` takes its small value there, whatever the command line said."""
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in small.items():
            setattr(args, name, value)
    return args
