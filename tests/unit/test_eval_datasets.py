"""Data-set loading, and the bundled Harbor data set against the files it cites."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kbgraph.evals._datasets import DatasetError, bundled_dataset_path, load_dataset
from kbgraph.evals._records import EvalRow, GoldSource, Passage
from kbgraph.evals._text import content_words, numbers

DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


def write(tmp_path: Path, text: str, newline: str = "\n") -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_rows_to_run_and_precomputed_rows(tmp_path: Path, newline: str) -> None:
    text = "\n".join(
        json.dumps(r, ensure_ascii=False)
        for r in [
            {
                "id": "a",
                "question": " Quelle langue ? ",
                "reference": "L'anglais.",
                "gold_sources": [
                    {"path": "docs/i18n.md", "line_start": 26, "line_end": 27},
                    "doc-7",
                ],
            },
            {
                "question": "Q2",
                "answer": "A [1]",
                "contexts": [
                    "plain",
                    {"text": "t", "source": "s.md", "line_start": 3, "line_end": 4},
                ],
            },
        ]
    )
    rows = load_dataset(write(tmp_path, "\n" + text + "\n\n", newline))
    first, second = rows
    assert (first.id, first.question, first.precomputed) == ("a", "Quelle langue ?", False)
    assert first.gold_sources == (GoldSource("docs/i18n.md", 26, 27), GoldSource(doc_id="doc-7"))
    assert second.id == "3" and second.precomputed
    assert second.contexts == (Passage(1, "plain"), Passage(2, "t", "s.md", 3, 4))


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes("\ufeff".encode() + b'{"question": "q"}\n')
    assert load_dataset(path)[0].question == "q"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"question": "ok"}\n{"question": ', ":2: not valid JSON"),
        ('{"reference": "r"}', '"question" is missing'),
        ('["question"]', "must be a JSON object"),
        (
            '{"question": "q", "gold_sources": [{"path": "a", "line_start": 5, "line_end": 2}]}',
            "invalid line range",
        ),
        ('{"question": "q", "gold_sources": [{"line_start": 5}]}', 'needs a "path"'),
        ('{"id": 1, "question": "q"}\n{"id": 1, "question": "r"}', "used twice"),
        ("\n\n", "has no rows"),
    ],
)
def test_bad_rows_say_where_and_what(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
        load_dataset(write(tmp_path, text))


def test_missing_file() -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset("/nonexistent/rows.jsonl")


def _gold_text(gold: GoldSource) -> str:
    """The cited lines of one gold source (every member's lines for an ``any_of`` group)."""
    if gold.any_of:
        return "\n".join(_gold_text(member) for member in gold.any_of)
    assert gold.path is not None and gold.line_start is not None and gold.line_end is not None
    lines = (DOCS / gold.path).read_text(encoding="utf-8").splitlines()
    assert 1 <= gold.line_start <= gold.line_end <= len(lines), gold
    return "\n".join(lines[gold.line_start - 1 : gold.line_end])


def _clauses(reference: str) -> list[str]:
    """The reference cut at sentence ends, commas, semicolons, colons and parentheses: each
    piece states one thing that the cited lines must hold."""
    pieces = re.split(r"(?<=[.,;:])\s+|\s*[()]\s*", reference)
    return [p for p in pieces if len(set(content_words(p))) >= 2]


BUNDLED_ROWS = [r for r in load_dataset(bundled_dataset_path()) if r.gold_sources]


def test_bundled_dataset_shape() -> None:
    rows = load_dataset(bundled_dataset_path())
    assert len(rows) >= 30 and len({r.id for r in rows}) == len(rows)
    assert len(BUNDLED_ROWS) >= 30
    assert all(r.reference for r in BUNDLED_ROWS)


@pytest.mark.parametrize("row", BUNDLED_ROWS, ids=lambda r: r.id)
def test_bundled_gold_lines_hold_the_reference_answer(row: EvalRow) -> None:
    """Every number of the reference, and a good part of each of its clauses, is on the
    cited lines (harbor-04 once cited 21-24 for "environment variables override
    harbor.yaml", which is on lines 3-4; harbor-18 cited 16-16 for the Authorization
    header on line 21)."""
    assert row.reference is not None
    gold_text = "\n".join(_gold_text(g) for g in row.gold_sources)
    gold_words = set(content_words(gold_text))
    assert numbers(row.reference) <= numbers(gold_text), row.id
    for clause in _clauses(row.reference):
        words = set(content_words(clause))
        assert len(words & gold_words) >= 0.5 * len(words), (row.id, clause)


@pytest.mark.parametrize(
    ("row_id", "fact"),
    [
        # Facts an audit found outside their row's gold lines; words alone miss the first.
        ("harbor-04", "Environment\nvariables always win over the file"),
        ("harbor-18", "Authorization: Bearer"),
        ("harbor-20", "POST /v1/auth/token"),
        ("harbor-39", "err.retry_after * 1000"),
    ],
)
def test_audited_facts_are_on_their_gold_lines(row_id: str, fact: str) -> None:
    (row,) = [r for r in BUNDLED_ROWS if r.id == row_id]
    assert fact in "\n".join(_gold_text(g) for g in row.gold_sources)


@pytest.mark.parametrize(
    "row", [r for r in BUNDLED_ROWS if any(g.any_of for g in r.gold_sources)], ids=lambda r: r.id
)
def test_each_alternative_of_a_bundled_any_of_group_answers_alone(row: EvalRow) -> None:
    """An ``any_of`` member is about the same fact as the reference: it holds a number of
    the reference (the value asked for) or several of its words, and its group's members
    share them (they say the same thing in different places)."""
    assert row.reference is not None
    wanted = set(content_words(row.reference)) | numbers(row.reference)
    for group in (g for g in row.gold_sources if g.any_of):
        found = []
        for member in group.any_of:
            text = _gold_text(member)
            have = wanted & (set(content_words(text)) | numbers(text))
            assert (numbers(row.reference) & have) or len(have) >= 3, (row.id, member, have)
            found.append(have)
        assert set.intersection(*found), (row.id, "the alternatives share nothing")


def test_any_of_gold_groups(tmp_path: Path) -> None:
    row = {
        "question": "q",
        "gold_sources": [
            {"any_of": [{"path": "a.md", "line_start": 3}, {"path": "b.md"}]},
            {"path": "c.md", "line_start": 1, "line_end": 2},
        ],
    }
    (loaded,) = load_dataset(write(tmp_path, json.dumps(row)))
    assert loaded.gold_sources == (
        GoldSource(any_of=(GoldSource("a.md", 3, 3), GoldSource("b.md"))),
        GoldSource("c.md", 1, 2),
    )


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ({"any_of": []}, "non-empty list"),
        ({"any_of": [{"path": "a", "line_start": 4, "line_end": 1}]}, "invalid line range"),
    ],
)
def test_bad_any_of_groups(tmp_path: Path, group: object, message: str) -> None:
    text = json.dumps({"question": "q", "gold_sources": [group]})
    with pytest.raises(DatasetError, match=message):
        load_dataset(write(tmp_path, text))
