"""Child process for the crash and concurrency tests: indexes a folder with a slow fake
embedder and prints each progress stage, so the parent can kill it at a chosen moment.

    _index_child.py FOLDER update|rebuild [VERSION ...]

With versions, each round first rewrites the folder as that corpus version (see
``_corpus.py``), then indexes it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._progress import ProgressEvent
from kbgraph.testing import FakeEmbeddings
from tests.integration._corpus import write_corpus


class SlowFake(FakeEmbeddings):
    """A real Embeddings whose batches take time, so kills land mid-embedding. It is a
    FakeEmbeddings, so it is described as ``fake:bow-384``, like the ``fake`` spec: an
    index it built is searched and updated by ``--embedding fake`` without a rebuild."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.002 * len(texts))
        return super().embed_documents(texts)


def main() -> None:
    folder, rebuild = sys.argv[1], sys.argv[2] == "rebuild"
    versions = [int(v) for v in sys.argv[3:]] or [None]

    def progress(event: ProgressEvent) -> None:
        print(f"{event.stage} {event.done} {event.total}", flush=True)

    kb = KnowledgeBase(folder, embedding=SlowFake(), lock_timeout=120)
    for version in versions:
        if version is not None:
            write_corpus(Path(folder), version)
        report = kb.index(progress=progress, rebuild=rebuild)
        print(f"finished {report.embedded} {report.reused}", flush=True)


if __name__ == "__main__":
    main()
