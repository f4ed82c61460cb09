"""Data-set loading, and the bundled Harbor data set against the files it cites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals._text import content_words, numbers
from evals.datasets import DatasetError, bundled_dataset_path, load_dataset
from evals.records import GoldSource, Passage

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
                "gold_sources": [{"path": "docs/i18n.md", "lineStart": 26, "lineEnd": 27}, "doc-7"],
            },
            {
                "question": "Q2",
                "answer": "A [1]",
                "contexts": [
                    "plain",
                    {"text": "t", "source": "s.md", "lineStart": 3, "lineEnd": 4},
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
            '{"question": "q", "gold_sources": [{"path": "a", "lineStart": 5, "lineEnd": 2}]}',
            "invalid line range",
        ),
        ('{"question": "q", "gold_sources": [{"lineStart": 5}]}', 'needs a "path"'),
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


def test_bundled_dataset_cites_lines_that_hold_the_answer() -> None:
    rows = load_dataset(bundled_dataset_path())
    assert len(rows) >= 30
    assert len({r.id for r in rows}) == len(rows)
    cited = [r for r in rows if r.gold_sources]
    assert len(cited) >= 30
    for row in cited:
        assert row.reference, row.id
        gold_text = ""
        for gold in row.gold_sources:
            assert gold.path is not None and gold.line_start is not None
            lines = (DOCS / gold.path).read_text(encoding="utf-8").splitlines()
            assert 1 <= gold.line_start <= (gold.line_end or 0) <= len(lines), row.id
            gold_text += "\n".join(lines[gold.line_start - 1 : gold.line_end]) + "\n"
        # Every number of the reference answer, and most of its words, are on the cited lines.
        assert numbers(row.reference) <= numbers(gold_text) | {"1", "2"}, row.id
        words = set(content_words(row.reference))
        assert len(words & set(content_words(gold_text))) >= 0.4 * len(words), row.id


def test_any_of_gold_groups(tmp_path: Path) -> None:
    row = {
        "question": "q",
        "gold_sources": [
            {"any_of": [{"path": "a.md", "lineStart": 3}, {"path": "b.md"}]},
            {"path": "c.md", "lineStart": 1, "lineEnd": 2},
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
        ({"any_of": [{"path": "a", "lineStart": 4, "lineEnd": 1}]}, "invalid line range"),
    ],
)
def test_bad_any_of_groups(tmp_path: Path, group: object, message: str) -> None:
    text = json.dumps({"question": "q", "gold_sources": [group]})
    with pytest.raises(DatasetError, match=message):
        load_dataset(write(tmp_path, text))
