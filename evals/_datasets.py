"""Evaluation data sets: JSON lines, one question per line.

A row to run through the agent::

    {"id": "q1", "question": "...", "reference": "...",
     "gold_sources": [{"path": "docs/a.md", "line_start": 10, "line_end": 14}, {"id": "doc-7"}]}

A pre-computed row, scored without running anything::

    {"question": "...", "answer": "... [1]", "contexts": ["text", {"text": "...", "source": ...}]}

Only ``question`` is required. ``id`` defaults to the line number. ``gold_sources`` items
are ``{path, line_start?, line_end?}`` or ``{id}`` objects, or bare strings (ids), or
``{"any_of": [...]}`` groups of such items. Every item is required (source recall is the
share retrieved); the members of an ``any_of`` group are alternatives, one suffices — for
a fact the docs state in two places.
``contexts`` items are strings or subgraph citations (``rag_citations`` and ``citations``
are accepted as other names for it), so that a run's ``results.jsonl`` reads back as a
data set of pre-computed rows and can be re-scored with another judge. A key the reader
does not know (``context_docs``, a misspelt ``refrence``) is an error for that row, not a
field quietly dropped; a pre-computed row with no contexts at all has its context metrics
undetermined, with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from kbgraph.errors import DatasetError

from ._records import EvalRow, GoldSource, Passage

BUNDLED = "examples_docs.jsonl"
_ROW_SHAPE = '{"question": "...", "reference": "...", "gold_sources": [...]}'
CONTEXT_KEYS = ("contexts", "rag_citations", "citations")
ROW_KEYS = frozenset({
    "id", "question", "reference", "ground_truth", "gold_sources", "answer", *CONTEXT_KEYS,
    "metadata",
    # A results.jsonl line reads back as a row: what it adds is not read.
    "status", "error", "metrics", "seconds", "notes",
})  # fmt: skip
OnError = Literal["raise", "row"]


def bundled_dataset_path(name: str = BUNDLED) -> Path:
    """Path of a data set shipped in ``evals/data/``."""
    return Path(str(resources.files("kbgraph.evals").joinpath("data", name)))


def load_dataset(path: str | Path, *, on_error: OnError = "raise") -> list[EvalRow]:
    """Every row of the JSON-lines file at ``path``; blank lines are skipped. A line that
    is not a valid row raises :class:`DatasetError`, or with ``on_error="row"`` becomes a
    row with ``error`` set (a batch run reports it as a failed row and runs the others)."""
    file = Path(path)
    if not file.is_file():
        raise DatasetError(
            f"data set {file} does not exist; give a JSON-lines file with one "
            f"{_ROW_SHAPE} object per line."
        )
    rows: list[EvalRow] = []
    seen: set[str] = set()
    # Bytes, decoded a line at a time: a byte that is not UTF-8 fails its own row (named
    # by its line), not the whole run.
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = ""
            try:
                line = _decoded(raw, number, file)
                if not line.strip():
                    continue
                row = parse_row(_json(line, number, file), number, file)
                if row.id in seen:
                    raise DatasetError(
                        f"{file}:{number}: id {row.id!r} is used twice; ids must be unique."
                    )
            except DatasetError as error:
                if on_error == "raise":
                    raise
                row = _invalid_row(line, number, str(error), seen)
            seen.add(row.id)
            rows.append(row)
    if not rows:
        raise DatasetError(f"data set {file} has no rows; add one {_ROW_SHAPE} per line.")
    return rows


def _decoded(raw: bytes, number: int, file: Path) -> str:
    """One line of the data set as text (a UTF-8 byte-order mark on the first dropped)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{file}:{number}: not UTF-8 text (byte {raw[exc.start]:#04x} at byte "
            f"{exc.start + 1} of the line); save the data set as UTF-8."
        ) from None
    return line.removeprefix("\ufeff") if number == 1 else line


def _invalid_row(line: str, number: int, error: str, seen: set[str]) -> EvalRow:
    """A stand-in for a line that is not a valid row: its id (or ``line-N``) and question
    where they can be read, and the error."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        data = None
    data = data if isinstance(data, Mapping) else {}
    row_id = str(data.get("id", f"line-{number}"))
    if row_id in seen:
        row_id = f"{row_id} (line {number})"
    question = data.get("question")
    return EvalRow(id=row_id, question=question if isinstance(question, str) else "", error=error)


def parse_row(data: Any, number: int, file: Path | str = "<row>") -> EvalRow:
    where = f"{file}:{number}"
    if not isinstance(data, Mapping):
        raise DatasetError(f"{where}: a row must be a JSON object like {_ROW_SHAPE}.")
    unknown = sorted(str(k) for k in data if k not in ROW_KEYS)
    if unknown:
        raise DatasetError(
            f"{where}: unknown key {', '.join(map(repr, unknown))}; a row has "
            f"{', '.join(sorted(ROW_KEYS - {'status', 'error', 'metrics', 'seconds', 'notes'}))} "
            "(contexts under 'contexts', 'rag_citations' or 'citations'; anything else under "
            "'metadata')."
        )
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f'{where}: "question" is missing or empty; every row needs one.')
    reference = data.get("reference", data.get("ground_truth"))
    if reference is not None and not isinstance(reference, str):
        raise DatasetError(f'{where}: "reference" must be a string.')
    answer = data.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise DatasetError(f'{where}: "answer" must be a string.')
    given = any(key in data for key in CONTEXT_KEYS)
    return EvalRow(
        id=str(data.get("id", number)),
        question=question.strip(),
        reference=reference,
        gold_sources=_gold(data.get("gold_sources") or [], where),
        answer=answer,
        contexts=_contexts(data, where) if answer is not None else None,
        metadata=data.get("metadata") or {},
        context_note=(
            None
            if answer is None or given
            else "the row has an answer but no contexts (under 'contexts', 'rag_citations' "
            "or 'citations'); give them, or an empty list for a retrieval that found nothing"
        ),
    )


def _json(line: str, number: int, file: Path) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{file}:{number}: not valid JSON ({exc.msg} at column {exc.colno}); each line "
            f"must be one JSON object like {_ROW_SHAPE}."
        ) from exc


def _gold(items: Any, where: str) -> tuple[GoldSource, ...]:
    if not isinstance(items, list):
        raise DatasetError(f'{where}: "gold_sources" must be a list.')
    out: list[GoldSource] = []
    for item in items:
        if isinstance(item, str):
            out.append(GoldSource(doc_id=item))
        elif isinstance(item, Mapping) and "any_of" in item:
            members = item["any_of"]
            if not isinstance(members, list) or not members:
                raise DatasetError(
                    f'{where}: "any_of" must be a non-empty list of gold sources, one of '
                    "which suffices."
                )
            out.append(GoldSource(any_of=_gold(members, where)))
        elif isinstance(item, Mapping) and (item.get("path") or item.get("id")):
            gold = GoldSource.from_dict(item)
            if (
                gold.line_start is not None
                and gold.line_end is not None
                and (gold.line_start < 1 or gold.line_end < gold.line_start)
            ):
                raise DatasetError(
                    f"{where}: gold source {dict(item)} has an invalid line range; lines are "
                    "1-based and line_end >= line_start."
                )
            out.append(gold)
        else:
            raise DatasetError(
                f'{where}: gold source {item!r} needs a "path" (with optional "line_start" '
                'and "line_end") or an "id".'
            )
    return tuple(out)


def _contexts(data: Mapping[str, Any], where: str) -> tuple[Passage, ...]:
    items = data.get("contexts", data.get("rag_citations", data.get("citations", [])))
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        raise DatasetError(f'{where}: "contexts" must be a list of strings or objects.')
    try:
        return tuple(Passage.from_any(item, i) for i, item in enumerate(items, start=1))
    except (TypeError, ValueError) as exc:
        raise DatasetError(f'{where}: invalid "contexts": {exc}.') from exc


__all__ = [
    "BUNDLED",
    "CONTEXT_KEYS",
    "ROW_KEYS",
    "DatasetError",
    "OnError",
    "bundled_dataset_path",
    "load_dataset",
    "parse_row",
]
