"""Child process for the crash and concurrency tests: indexes a folder with a slow fake
embedder and prints each progress stage, so the parent can kill it at a chosen moment."""

from __future__ import annotations

import sys
import time

from retrieval import KnowledgeBase
from retrieval.embeddings import FakeEmbeddings
from retrieval.progress import ProgressEvent


class SlowFake(FakeEmbeddings):
    """A real Embeddings whose batches take time, so kills land mid-embedding."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.002 * len(texts))
        return super().embed_documents(texts)


def main() -> None:
    folder, rebuild = sys.argv[1], sys.argv[2] == "rebuild"

    def progress(event: ProgressEvent) -> None:
        print(f"{event.stage} {event.done} {event.total}", flush=True)

    kb = KnowledgeBase(folder, embedding=SlowFake(), lock_timeout=120)
    report = kb.index(progress=progress, rebuild=rebuild)
    print(f"finished {report.embedded} {report.reused}", flush=True)


if __name__ == "__main__":
    main()
