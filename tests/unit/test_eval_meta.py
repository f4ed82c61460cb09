"""The meta-evaluation on a tiny labelled data folder (same layout as ../shared/data/evals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbgraph.evals._benchmarks import Labelled, begin, halueval, sample, summedits
from kbgraph.evals._cli import eval_group
from kbgraph.evals._datasets import DatasetError
from kbgraph.evals._judges import OfflineJudge, OverlapJudge
from kbgraph.evals._meta import BASELINE, faithfulness_score, format_table, run_meta
from kbgraph.testing import FakeEmbeddings

KNOWLEDGE = [
    (
        "Harbor listens on port 8080 and serves metrics on port 9102.",
        "What port does Harbor use?",
        "Harbor listens on port 8080.",
        "Harbor listens on port 443 behind nginx.",
    ),
    (
        "Access tokens expire after 15 minutes and cannot be refreshed.",
        "How long do tokens last?",
        "Tokens expire after 15 minutes.",
        "Tokens last one week and refresh automatically.",
    ),
    (
        "L'API renvoie toujours des messages d'erreur en anglais.",
        "Quelle langue ?",
        "Les messages d'erreur sont en anglais.",
        "Les messages sont traduits en japonais.",
    ),
]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "wikieval").mkdir()
    (tmp_path / "halueval").mkdir()
    (tmp_path / "begin").mkdir()
    wiki = [
        {
            "question": q,
            "context_v1": k,
            "answer": good,
            "ungrounded_answer": bad,
            "poor_answer": "Yes.",
        }
        for k, q, good, bad in KNOWLEDGE
    ]
    (tmp_path / "wikieval" / "wikieval.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in wiki), encoding="utf-8"
    )
    halu = [
        {"knowledge": k, "question": q, "right_answer": good, "hallucinated_answer": bad}
        for k, q, good, bad in KNOWLEDGE
    ]
    for split in ("qa_one_turn", "qa_multi_turn"):
        (tmp_path / "halueval" / f"{split}.jsonl").write_text(
            "\n".join(json.dumps(r, ensure_ascii=False) for r in halu), encoding="utf-8"
        )
    header = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label"
    lines = [header]
    for k, _q, good, bad in KNOWLEDGE:
        lines += [
            f"t5\twow\t{k}\thi\t{good}\tFully attributable",
            f"t5\twow\t{k}\thi\t{bad}\tNot fully attributable",
            f"t5\twow\t{k}\thi\tthat's cool\tGeneric",
        ]
    for name in (
        "wow_begin_test_wow.tsv",
        "cmu-dog_begin_dev_cmu.tsv",
        "topicalchat_begin_dev_tc.tsv",
        "wow_begin_dev_wow.tsv",
    ):
        (tmp_path / "begin" / name).write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return tmp_path


def test_readers_skip_generic_and_pair_answers(data_dir: Path) -> None:
    items = begin(data_dir, ["wow_begin_test_wow.tsv"])
    assert [i.grounded for i in items] == [True, False] * 3
    assert [i.grounded for i in halueval(data_dir, "qa_one_turn")] == [True, False] * 3


def test_sample_keeps_both_labels() -> None:
    items = [Labelled(None, "k", str(i), i % 10 == 0) for i in range(100)]
    picked = sample(items, 20)
    assert len(picked) == 20
    assert sum(i.grounded for i in picked) == 2


def test_run_meta_reports_every_benchmark_with_the_baseline(data_dir: Path) -> None:
    results = run_meta([OfflineJudge(FakeEmbeddings()), OverlapJudge()], data_dir=data_dir)
    assert [(r.benchmark, r.measure) for r in results] == [
        ("WikiEval", "pairwise accuracy"),
        ("HaluEval QA", "AUROC"),
        ("HaluEval QA", "AUROC"),
        ("BEGIN", "AUROC"),
        ("BEGIN", "AUROC"),
        ("WikiEval", "pairwise accuracy"),
    ]
    for r in results:
        assert set(r.scores) == {"offline", "overlap-baseline", BASELINE}
        assert all(0.0 <= v <= 1.0 for v in r.scores.values())
    # These toy answers are separable by their words: every judge gets them right.
    assert results[1].scores["offline"] == 1.0
    table = format_table(results)
    assert table.splitlines()[0] == (
        "| benchmark | split | measure | n | offline | overlap-baseline | overlap baseline "
        "| offline seconds | overlap-baseline seconds | offline CPU s/100 "
        "| overlap-baseline CPU s/100 |"
    )
    assert "| BEGIN | wow test (held out) | AUROC | 6 |" in table


def test_run_meta_runs_only_the_chosen_benchmarks(data_dir: Path) -> None:
    results = run_meta([OverlapJudge()], data_dir=data_dir, benchmarks=["begin"])
    assert [r.benchmark for r in results] == ["BEGIN", "BEGIN"]


def test_faithfulness_score_without_claims_is_zero() -> None:
    assert faithfulness_score(OverlapJudge(), "q", "context", "I don't know.") == 0.0


def test_meta_command(data_dir: Path) -> None:
    result = CliRunner().invoke(
        eval_group,
        [
            "meta",
            "--data",
            str(data_dir),
            "--embedding",
            "fake",
            "--quiet",
            "--json",
            "--benchmark",
            "wikieval",
            "--benchmark",
            "halueval",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["benchmark"] for r in rows] == ["WikiEval", "HaluEval QA", "HaluEval QA", "WikiEval"]
    assert "offline" in rows[0]["scores"]


def test_meta_command_explains_missing_data(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        eval_group, ["meta", "--data", str(tmp_path), "--embedding", "fake", "--quiet"]
    )
    assert result.exit_code == 2
    assert "is missing" in result.output


def test_the_clock_runs_through_the_judges_prefetch(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedding ahead is the offline judge's main cost: timing that starts after it
    reported 0.0 s."""
    events: list[str] = []

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            events.append("clock")
            return float(len(events))

        @staticmethod
        def process_time() -> float:
            return float(len(events))

    class Warming(OfflineJudge):
        def prefetch(self, *args: object, **kwargs: object) -> None:
            events.append("prefetch")

    monkeypatch.setattr("kbgraph.evals._meta.time", Clock)
    results = run_meta([Warming(FakeEmbeddings())], data_dir=data_dir, benchmarks=["begin"])
    prefetches = [i for i, event in enumerate(events) if event == "prefetch"]
    assert len(prefetches) == 2
    # Each split: the clock starts, then the prefetch, then the clock stops after scoring.
    assert all(i > 0 and events[i - 1] == "clock" for i in prefetches)
    assert all(r.seconds["offline"] > 0 for r in results)


def test_each_wikieval_split_embeds_ahead_only_what_its_metric_uses(data_dir: Path) -> None:
    """Faithfulness judges claims against contexts; relevance, questions and answers. Each
    split used to embed both (a third more CPU on WikiEval, counted as the judge's)."""
    warmed: list[tuple[int, int]] = []

    class Warming(OfflineJudge):
        def prefetch(self, claims: Any = (), texts: Any = (), **kwargs: Any) -> None:
            claims, texts = list(claims), list(texts)
            warmed.append((len(claims), len(texts)))
            super().prefetch(claims, texts, **kwargs)

    results = run_meta([Warming(FakeEmbeddings())], data_dir=data_dir, benchmarks=["wikieval"])
    assert [r.split.split(":")[0] for r in results] == ["faithfulness", "answer relevance"]
    (claims, texts), (relevance_claims, relevance_texts) = warmed
    assert claims > 0 and texts == 0
    assert relevance_claims == 0 and relevance_texts > 0


@pytest.fixture
def summedits_dir(tmp_path: Path) -> Path:
    """Two SummEdits domains in the release's format (a JSON list per domain)."""
    folder = tmp_path / "summedits"
    folder.mkdir()
    for domain, (doc, good, bad) in {
        "news": (
            "The council approved the budget on Monday.\r\nThe mayor resigned on Friday.",
            "The council approved the budget on Monday.",
            "The council rejected the budget on Sunday.",
        ),
        "podcast": (
            "Le maire a démissionné vendredi après le vote du budget.",
            "Le maire a démissionné vendredi.",
            "Le préfet a été élu dimanche à Lyon.",
        ),
    }.items():
        rows = [
            {"doc": doc, "summary": good, "label": 1, "split": "test"},
            {"doc": doc, "summary": bad, "label": 0, "split": "test"},
        ]
        (folder / f"summedits_{domain}.json").write_text(
            json.dumps(rows, ensure_ascii=False), encoding="utf-8"
        )
    return folder


def test_summedits_reads_every_domain_present(summedits_dir: Path) -> None:
    found = summedits(summedits_dir)
    assert list(found) == ["news", "podcast"]
    assert [i.grounded for i in found["podcast"]] == [True, False]
    assert found["news"][0].context.startswith("The council approved")


def test_summedits_explains_a_wrong_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no summedits_<domain>\.json"):
        summedits(tmp_path)
    (tmp_path / "summedits_news.json").write_text('{"doc": 1}', encoding="utf-8")
    with pytest.raises(DatasetError, match="is not a SummEdits file"):
        summedits(tmp_path)


def test_meta_command_adds_summedits_per_domain_and_their_macro_average(
    data_dir: Path, summedits_dir: Path
) -> None:
    result = CliRunner().invoke(
        eval_group,
        [
            "meta",
            "--data",
            str(data_dir),
            "--summedits",
            str(summedits_dir),
            "--embedding",
            "fake",
            "--quiet",
            "--json",
            "--benchmark",
            "begin",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    summ = [r for r in rows if r["benchmark"] == "SummEdits"]
    assert [r["split"] for r in summ] == ["news", "podcast", "macro over 2 domains"]
    news, podcast, average = (r["scores"]["offline"] for r in summ)
    assert average == pytest.approx((news + podcast) / 2, abs=1e-3)
    assert summ[-1]["n"] == 4
