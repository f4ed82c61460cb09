"""Accuracy of DecideRetrieve's closing detection on the held-out phrasings
(``tests/unit/_closings_heldout.py``, written before the detector and never tuned on).
Prints figures; not a test. Counts do not depend on the machine's load.

    python benchmarks/closings_accuracy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbgraph.graphs._nodes._closings import ClosingDetector, default_detector
from kbgraph.graphs._nodes.decide_retrieve import is_small_talk_or_closing
from tests.unit._closings_heldout import CLOSINGS, QUESTIONS


def main() -> None:
    print("| path | closings skipped | questions retrieved | accuracy | misses |")
    print("|---|---|---|---|---|")
    for name, detector in (("local model", default_detector()), ("word list", ClosingDetector())):
        if name == "local model" and detector.embeddings is None:
            continue
        skipped = [t for t in CLOSINGS if is_small_talk_or_closing(t, detector)]
        kept = [t for t in QUESTIONS if not is_small_talk_or_closing(t, detector)]
        misses = [t for t in CLOSINGS if t not in skipped] + [t for t in QUESTIONS if t not in kept]
        total = len(CLOSINGS) + len(QUESTIONS)
        print(
            f"| {name} | {len(skipped)}/{len(CLOSINGS)} | {len(kept)}/{len(QUESTIONS)} | "
            f"{(len(skipped) + len(kept)) / total:.3f} | {'; '.join(misses) or '-'} |"
        )


if __name__ == "__main__":
    main()
