"""Progress bars on stderr for the engine's progress callbacks."""

from __future__ import annotations

import sys
from types import TracebackType

from tqdm import tqdm

from kbgraph.retrieval import ProgressEvent


class TqdmProgress:
    """One bar per stage; always on stderr so that ``--json`` stdout stays clean."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._bar: tqdm | None = None
        self._stage: str | None = None

    def __call__(self, event: ProgressEvent) -> None:
        if not self.enabled or event.stage == "scan":
            return
        if event.stage != self._stage:
            self.close()
            self._stage = event.stage
            self._bar = tqdm(
                total=event.total,
                desc=event.stage,
                file=sys.stderr,
                unit="chunk" if event.stage == "embed" else "file",
                leave=False,
            )
        if self._bar is not None:
            self._bar.total = event.total
            self._bar.n = event.done
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> TqdmProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
