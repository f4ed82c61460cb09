"""The held-out test sets in the meta-evaluation: readers, the novelty floors, the held-out
figures (balanced accuracy at 0.5, AUROC within length groups, anchors), the table and the
`--heldout` / `--benchmark` options. Every row here is written for this test; none comes from
the held-out sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from click.testing import CliRunner

from kbgraph.evals import _heldout as heldout
from kbgraph.evals._cli import META_BENCHMARKS, eval_group
from kbgraph.evals._datasets import DatasetError
from kbgraph.evals._judges import OverlapJudge, ScriptedJudge
from kbgraph.evals._meta import (
    ALL_BENCHMARKS,
    BASELINE,
    NOVEL_FACTS,
    NOVEL_WORDS,
    Benchmark,
    faithfulness_score,
    format_table,
    run_meta,
)
from kbgraph.evals._novelty import novel_fact_count, novel_word_share
from kbgraph.evals._stats import auroc_within_groups, balanced_accuracy

PORTS = "The gateway listens on port 8080. Metrics are served on port 9102 by Harbor."
TOKENS = "Access tokens expire after fifteen minutes. Refresh tokens last for thirty days."
SHOP = '{"name": "Blue Door Cafe", "city": "Tucson", "stars": 4.5, "hours": "8-16"}'


def _rows(
    task: str, context: str, good: list[str], bad: list[str], prefix: str
) -> list[dict[str, Any]]:
    rows = [
        {"id": f"{prefix}-{i}", "context": context, "answer": a, "faithful": True, "task": task}
        for i, a in enumerate(good)
    ]
    rows += [
        {
            "id": f"{prefix}-x{i}",
            "context": context,
            "answer": a,
            "faithful": False,
            "task": task,
        }
        for i, a in enumerate(bad)
    ]
    return rows


def _write(folder: Path, rows: list[dict[str, Any]], meta: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (folder / "meta.jsonl").write_text(
        "".join(json.dumps(m) + "\n" for m in meta), encoding="utf-8"
    )


@pytest.fixture
def heldout_dir(tmp_path: Path) -> Path:
    """The three folders, each task with both labels; the file lists Data2txt first and
    meta.jsonl lists its ids in another order than rows.jsonl."""
    root = tmp_path / "heldout"
    rag = _rows(
        "Data2txt",
        SHOP,
        ["Blue Door Cafe in Tucson has 4.5 stars.", "The cafe opens 8-16 in Tucson."],
        ["Blue Door Cafe in Phoenix has 5 stars and free parking."],
        "d",
    )
    rag += _rows(
        "QA",
        PORTS,
        ["The gateway listens on port 8080.", "Harbor serves metrics on port 9102."],
        ["The gateway listens on port 443 behind Nginx and Envoy."],
        "q",
    )
    rag += _rows(
        "Summary",
        TOKENS,
        ["Access tokens expire after fifteen minutes.", "Refresh tokens last thirty days."],
        ["Tokens never expire, according to Okta engineers in Berlin."],
        "s",
    )
    questions = [{"id": r["id"], "question": None} for r in rag]
    questions[3] = {"id": "q-0", "question": "Which port does the gateway use?"}
    questions[4] = {"id": "q-1", "question": None}
    _write(root / "ragtruth", rag, list(reversed(questions)))
    lfqa = _rows("webgpt", PORTS, ["Harbor serves metrics on port 9102."], ["Port 22."], "w")
    lfqa += _rows("alpaca_wdoc", TOKENS, ["Tokens expire."], ["Tokens are free forever."], "a")
    _write(root / "lfqa_verification", lfqa, [{"id": "w-0", "question": "Metrics?"}])
    attr = _rows("HAGRID", PORTS, ["Port 8080 is used."], ["Port 443 is used."], "h")
    attr += _rows("Mystery", PORTS, ["Metrics: 9102."], ["Metrics: 9999."], "m")
    attr += _rows("ExpertQA", TOKENS, ["Tokens expire."], ["Tokens cost $5."], "e")
    _write(root / "attributionbench", attr, [])
    return root


def test_ragtruth_reads_tasks_in_order_with_questions_joined_by_id(heldout_dir: Path) -> None:
    tasks = heldout.ragtruth(heldout_dir)
    assert list(tasks) == ["QA", "Summary", "Data2txt"]
    qa = tasks["QA"]
    assert [i.grounded for i in qa] == [True, True, False]
    assert qa[0].question == "Which port does the gateway use?"
    assert qa[0].context == PORTS
    assert qa[1].question is None and tasks["Summary"][0].question is None


def test_lfqa_pools_the_settings_and_attributionbench_keeps_subsets(heldout_dir: Path) -> None:
    sentences = heldout.lfqa(heldout_dir)
    assert [i.answer for i in sentences] == [
        "Harbor serves metrics on port 9102.",
        "Port 22.",
        "Tokens expire.",
        "Tokens are free forever.",
    ]
    assert sentences[0].question == "Metrics?"
    # The release's subsets in its order first, then any other in file order.
    assert list(heldout.attributionbench(heldout_dir)) == ["ExpertQA", "HAGRID", "Mystery"]


def test_readers_explain_a_missing_folder_and_a_bad_row(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"point --heldout \(or \$KBGRAPH_HELDOUT_DATA\)"):
        heldout.ragtruth(tmp_path)
    row = {"id": "1", "context": "c", "answer": "a", "faithful": "yes", "task": "QA"}
    (tmp_path / "ragtruth").mkdir()
    (tmp_path / "ragtruth" / "rows.jsonl").write_text(
        "\n" + json.dumps(row) + "\n", encoding="utf-8"
    )
    with pytest.raises(DatasetError, match=r"line 2 is not a held-out row.*true or false"):
        heldout.ragtruth(tmp_path)


def test_default_heldout_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(heldout.HELDOUT_ENV, raising=False)
    assert heldout.default_heldout_dir().parts[-3:] == ("shared", "data", "heldout")
    monkeypatch.setenv(heldout.HELDOUT_ENV, str(tmp_path))
    assert heldout.default_heldout_dir() == tmp_path


def test_novel_word_share_by_hand() -> None:
    # Words of 4+ letters: "gateway", "listens", "port"; and "nginx" is not in the context.
    # "The", "on", "443" are not words of four letters. 1 of 4 is new.
    assert novel_word_share("The gateway listens on port 443 via Nginx.", PORTS) == 0.25
    assert novel_word_share("GATEWAY Port", PORTS) == 0.0  # case is ignored
    assert novel_word_share("It is 42.", PORTS) == 0.0  # no long word, nothing claimed


def test_novel_fact_count_by_hand() -> None:
    # New: 443 (a number), "Envoy" (a name). Known: 8080, "Harbor", and "The" (in the
    # context, whatever its case). "gateway" is neither a number nor capitalised.
    assert novel_fact_count("The gateway uses 8080 and 443 with Harbor and Envoy.", PORTS) == 2
    # Numbers are compared normalised: "fifteen" is 15, "2,500" is 2500.
    assert novel_fact_count("Tokens expire after 15 minutes.", TOKENS) == 0
    assert novel_fact_count("It holds 2500 rows.", "It holds 2,500 rows.") == 0
    assert novel_fact_count("It holds 2500 rows.", "It holds 25 rows.") == 1


def test_run_meta_reports_the_heldout_figures(heldout_dir: Path) -> None:
    judge = OverlapJudge()
    results = run_meta(
        [judge], heldout_dir=heldout_dir, benchmarks=["ragtruth", "lfqa", "attributionbench"]
    )
    assert [(r.benchmark, r.split) for r in results] == [
        ("RAGTruth", "QA"),
        ("RAGTruth", "Summary"),
        ("RAGTruth", "Data2txt"),
        ("RAGTruth", heldout.RAGTRUTH_MEAN),
        ("LFQA-Verification", heldout.LFQA_SPLIT),
        ("AttributionBench", "ExpertQA"),
        ("AttributionBench", "HAGRID"),
        ("AttributionBench", "Mystery"),
    ]
    assert all(r.heldout for r in results)
    qa = results[0]
    assert set(qa.scores) == {judge.name, BASELINE, NOVEL_WORDS, NOVEL_FACTS}
    assert set(qa.balanced_accuracy) == {judge.name}
    # The same figures computed from the judge's own scores.
    items = heldout.ragtruth(heldout_dir)["QA"]
    values = [faithfulness_score(judge, i.question, i.context, i.answer) for i in items]
    labels = [i.grounded for i in items]
    assert qa.balanced_accuracy[judge.name] == balanced_accuracy(values, labels, 0.5)
    lengths = [len(i.answer.split()) for i in items]
    assert qa.within_length.get(judge.name) == auroc_within_groups(values, labels, lengths, 4)
    # The made-up "Envoy" and "Nginx" and the new 443: the floors rank it last.
    assert qa.scores[NOVEL_FACTS] == 1.0 and qa.scores[NOVEL_WORDS] == 1.0
    mean = results[3]
    parts = results[:3]
    assert mean.n == sum(p.n for p in parts)
    for figures in ("scores", "balanced_accuracy"):
        got = getattr(mean, figures)[judge.name]
        assert got == pytest.approx(sum(getattr(p, figures)[judge.name] for p in parts) / 3)
    assert any("HHEM-2.1-Open 74.3" in a for a in qa.anchors)
    assert any("Bespoke-MiniCheck-7B 84.0" in a for a in mean.anchors)
    assert any("MiniCheck-Flan-T5-L 85.2" in a for a in results[4].anchors)
    assert results[6].anchors == ()  # no published figure for HAGRID


def test_a_judge_at_its_own_line_gets_its_balanced_accuracy(heldout_dir: Path) -> None:
    """A scripted judge that rejects the one made-up port and supports the rest gets
    balanced accuracy 1.0 at 0.5 on QA; so does one that supports everything, since the
    score meta reads carries the checkable-facts verdicts (issue 41): the made-up port is
    in no source."""
    picky = ScriptedJudge(
        default="supported", rules=(lambda claim, _: "not_supported" if "443" in claim else None,)
    )
    results = run_meta([picky], heldout_dir=heldout_dir, benchmarks=["ragtruth"])
    qa = results[0]
    assert qa.balanced_accuracy[picky.name] == 1.0
    lenient = ScriptedJudge(default="supported")
    (qa,) = run_meta([lenient], heldout_dir=heldout_dir, benchmarks=["ragtruth"])[:1]
    assert qa.balanced_accuracy[lenient.name] == 1.0


def test_to_dict_adds_the_heldout_figures_only_to_heldout_rows(heldout_dir: Path) -> None:
    (qa, *_) = run_meta([OverlapJudge()], heldout_dir=heldout_dir, benchmarks=["ragtruth"])
    data = qa.to_dict()
    assert set(data) >= {"balanced_accuracy", "auroc_within_length_groups", "anchors"}
    assert isinstance(data["anchors"], list)


def test_format_table_puts_the_heldout_sets_in_their_own_table(heldout_dir: Path) -> None:
    results = run_meta([OverlapJudge()], heldout_dir=heldout_dir, benchmarks=["lfqa"])
    table = format_table(results)
    head, rule, row = table.splitlines()
    name = "overlap-baseline"
    assert head == (
        f"| benchmark | split | n | {name} AUROC | {name} bal. acc. @0.5 "
        f"| {name} AUROC in length groups | overlap baseline AUROC "
        "| overlap baseline in length groups | novel words baseline AUROC "
        "| novel words baseline in length groups | novel numbers+names baseline AUROC "
        "| novel numbers+names baseline in length groups | published (bal. acc., %) "
        f"| {name} seconds | {name} CPU s/100 |"
    )
    assert rule == "|" + "---|" * 15
    assert row.startswith("| LFQA-Verification | answer sentences | 4 | ")
    assert "MiniCheck-Flan-T5-L 85.2 (LLM-AggreFact LFQA)" in row


def test_meta_benchmark_choices_are_the_literal() -> None:
    assert META_BENCHMARKS == ALL_BENCHMARKS == get_args(Benchmark)


def test_meta_command_runs_one_heldout_set_sampled(heldout_dir: Path) -> None:
    result = CliRunner().invoke(
        eval_group,
        [
            "meta",
            "--heldout",
            str(heldout_dir),
            "--benchmark",
            "ragtruth",
            "--judge",
            "overlap",
            "--limit",
            "2",
            "--quiet",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["split"] for r in rows] == ["QA", "Summary", "Data2txt", heldout.RAGTRUTH_MEAN]
    # --limit 2 keeps one answer of each label per task.
    assert [r["n"] for r in rows] == [2, 2, 2, 6]
    assert set(rows[0]["balanced_accuracy"]) == {"overlap-baseline"}


def test_meta_command_finds_the_heldout_folder_by_environment(
    heldout_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(heldout.HELDOUT_ENV, str(heldout_dir))
    args = ["meta", "--benchmark", "attributionbench", "--judge", "overlap", "--quiet"]
    result = CliRunner().invoke(eval_group, args)
    assert result.exit_code == 0, result.output
    assert "| AttributionBench | HAGRID | 2 |" in result.output
    monkeypatch.setenv(heldout.HELDOUT_ENV, str(heldout_dir / "nowhere"))
    result = CliRunner().invoke(eval_group, args)
    assert result.exit_code == 2
    assert "nowhere/attributionbench/rows.jsonl is missing" in result.output


def test_a_missing_heldout_set_fails_before_any_benchmark_runs(
    heldout_dir: Path, tmp_path: Path
) -> None:
    """The held-out files are read first: a missing one must not cost an hour of RAGTruth
    (or of the other sets) before it is found out."""
    (heldout_dir / "attributionbench" / "rows.jsonl").unlink()
    judge = ScriptedJudge(default="supported")
    with pytest.raises(DatasetError, match=r"attributionbench/rows\.jsonl is missing"):
        run_meta(
            [judge],
            data_dir=tmp_path / "no-evals",
            heldout_dir=heldout_dir,
            benchmarks=["begin", "ragtruth", "attributionbench"],
        )
    assert judge.calls == []


def _write_faithbench_and_summac(root: Path) -> None:
    """FaithBench's CSV and SummaC's four JSON files, in their releases' shapes, with rows
    written for this test."""
    (root / "faithbench").mkdir(parents=True)
    (root / "faithbench" / "FaithBench.csv").write_text(
        "source,summary,LLM,worst-label,best-label\n"
        f'"{PORTS}",The gateway listens on port 8080.,m1,Consistent,Consistent\n'
        f'"{PORTS}",Harbor serves metrics on port 9102.,m2,Benign,Consistent\n'
        f'"{PORTS}",The gateway listens on port 443.,m3,Unwanted,Questionable\n'
        f'"{TOKENS}",Refresh tokens last thirty days.,m1,Questionable,Consistent\n',
        encoding="utf-8",
    )
    (root / "summac").mkdir()
    for name in heldout.SUMMAC_SUBSETS:
        rows = {
            f"{name}_0": {"document": TOKENS, "claim": "Tokens expire.", "label": 1},
            f"{name}_1": {"document": TOKENS, "claim": "Tokens cost $5.", "label": 0},
        }
        (root / "summac" / f"{name}.json").write_text(json.dumps(rows), encoding="utf-8")


def test_faithbench_and_summac_are_read_and_reported(tmp_path: Path) -> None:
    # Issue 41 item 4: eval meta reports FaithBench and SummaC beside the other test sets.
    _write_faithbench_and_summac(tmp_path)
    summaries = heldout.faithbench(tmp_path)
    # Only "Unwanted" makes a summary unfaithful; benign and questionable ones are not.
    assert [i.grounded for i in summaries] == [True, True, False, True]
    assert summaries[0].context == PORTS and summaries[0].question is None
    subsets = heldout.summac(tmp_path)
    assert list(subsets) == list(heldout.SUMMAC_SUBSETS)
    assert [i.grounded for i in subsets["factcc"]] == [True, False]
    results = run_meta([OverlapJudge()], heldout_dir=tmp_path, benchmarks=["faithbench", "summac"])
    assert [(r.benchmark, r.split) for r in results] == [
        ("FaithBench", heldout.FAITHBENCH_SPLIT),
        *[("SummaC", name) for name in heldout.SUMMAC_SUBSETS],
        ("SummaC", heldout.SUMMAC_MACRO),
    ]
    assert all(r.heldout and r.balanced_accuracy for r in results)
    assert results[-1].n == 8


def test_faithbench_and_summac_explain_a_missing_file(tmp_path: Path) -> None:
    for reader in (heldout.faithbench, heldout.summac):
        with pytest.raises(DatasetError, match=r"faithbench/ and summac/"):
            reader(tmp_path)
