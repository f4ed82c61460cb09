"""The BEIR evaluator end to end on a tiny BEIR-format data set written by the test, with
the fake (hashed bag-of-words) embedding: every mode, including the whole subgraph, must
reproduce nDCG@10 values worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbgraph.errors import ConfigError
from kbgraph.evals._beir import BeirRun, RunSettings, load_beir, retrieval_command, run_beir
from kbgraph.evals._beir._folder import file_name, write_corpus

LOG2_3 = math.log2(3)

# Each query's words occur only in the documents listed for it, so every ranker puts those
# documents first, in the order of how strongly they match; every other document scores 0
# for BM25 and ~0 for the hashed vectors.
CORPUS = [
    # q1 "glacier melting rates": g1 matches every word twice, g2 one word once.
    {"_id": "g1", "title": "Glacier melting rates", "text": "Glacier melting rates rose."},
    {"_id": "g2", "title": "Alpine survey", "text": "One glacier among lakes, forests and"
     " villages, surveyed over decades by hikers and geologists alike."},
    # q2 "café crème brûlée": non-ASCII words in a document with CRLF line ends; its id
    # is not a plain file name.
    {"_id": "c/1 é", "title": "Café menu", "text": "Café crème\r\nand brûlée\r\nserved daily."},
    # q3 "volcano eruption": the decoy v0 matches best but is judged not relevant (grade 0).
    {"_id": "v0", "title": "Volcano eruption", "text": "Volcano eruption, volcano eruption."},
    {"_id": "v1", "title": "Harbour towns", "text": "A volcano near quiet harbour towns with"
     " fishing boats, markets, churches and narrow streets."},
    # A document whose id is q1's own id and which matches q1 best: BEIR leaves it out of
    # q1's ranking (ignore_identical_ids), so by default it changes nothing below.
    {"_id": "q1", "title": "Glacier melting rates", "text": "Glacier melting rates, glacier"
     " melting rates."},
    # q4 (train split only) "lighthouse keepers".
    {"_id": "t1", "title": "Lighthouse keepers", "text": "Lighthouse keepers kept logs."},
    {"_id": "n1", "title": "Unrelated", "text": "Spreadsheets, invoices and quarterly taxes."},
]  # fmt: skip
QUERIES = [
    {"_id": "q1", "text": "glacier melting rates"},
    {"_id": "q2", "text": "café crème brûlée"},
    {"_id": "q3", "text": "volcano eruption"},
]
TRAIN_QUERIES = [{"_id": "q4", "text": "lighthouse keepers"}]
# q9 is judged but has no text in any query file: it cannot run and scores 0.
TEST_QRELS = [("q1", "g1", 1), ("q1", "g2", 2), ("q2", "c/1 é", 1), ("q3", "v1", 1),
              ("q3", "v0", 0), ("q9", "g1", 1)]  # fmt: skip

# By hand (gain = grade, discount log2(rank + 1)):
# q1: ranking g1 (grade 1), g2 (grade 2)
#     DCG = 1/log2(2) + 2/log2(3) = 1 + 1.2618595 = 2.2618595
#     IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.6309298 = 2.6309298 → nDCG 0.8597186; MRR 1
# q2: the one relevant document first → nDCG 1; MRR 1
# q3: v0 (grade 0) first, v1 second → DCG = 1/log2(3) = 0.6309298, IDCG = 1 → nDCG 0.6309298;
#     MRR 1/2
# q9: no text, no ranking → nDCG 0, MRR 0, recall 0
# mean nDCG@10 = (0.8597186 + 1 + 0.6309298 + 0) / 4 = 0.6226621; mean MRR@10 = 2.5 / 4;
# mean recall@10 = 3 / 4
# With the query's own id kept, q1's ranking is q1 (not judged), g1, g2:
#     DCG = 1/log2(3) + 2/log2(4) = 0.6309298 + 1 = 1.6309298; IDCG 2.6309298 → 0.6199062
EXPECTED_NDCG = {
    "q1": (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3),
    "q2": 1.0,
    "q3": 1 / LOG2_3,
    "q9": 0.0,
}
MEAN_NDCG = 0.6226621
MEAN_MRR = 2.5 / 4
Q1_NDCG_WITH_OWN_ID = (1 / LOG2_3 + 2 / 2) / (2 + 1 / LOG2_3)
SUMMARY_KEYS = {
    "ndcg@10", "recall@10", "recall@100", "mrr@10", "index_s", "index_kind", "p50_ms", "p95_ms"
}  # fmt: skip


def _jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


@pytest.fixture(scope="module")
def beir_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("beir") / "tiny"
    (root / "qrels").mkdir(parents=True)
    _jsonl(root / "corpus.jsonl", CORPUS)
    _jsonl(root / "queries.jsonl", QUERIES)
    _jsonl(root / "queries_all.jsonl", QUERIES + TRAIN_QUERIES)
    tsv = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in TEST_QRELS)
    (root / "qrels" / "test.tsv").write_text(tsv, "utf-8")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq4\tt1\t1\n", "utf-8")
    return root


@pytest.fixture(scope="module")
def full_run(beir_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> BeirRun:
    work = tmp_path_factory.mktemp("work")
    return run_beir(beir_dir, settings=RunSettings(embedding="fake"), work_dir=work)


def test_hand_computed_ndcg_in_every_mode(full_run: BeirRun) -> None:
    run = full_run
    assert list(run.results) == ["bm25", "vector", "hybrid", "graph"]
    assert EXPECTED_NDCG["q1"] == pytest.approx(0.8597186, abs=1e-7)
    assert sum(EXPECTED_NDCG.values()) / 4 == pytest.approx(MEAN_NDCG, abs=1e-7)
    assert (run.queries, run.missing_queries) == (4, 1)
    for mode, result in run.results.items():
        for qid, expected in EXPECTED_NDCG.items():
            assert result.per_query[qid]["ndcg@10"] == pytest.approx(expected), (mode, qid)
        assert result.metrics["ndcg@10"] == pytest.approx(MEAN_NDCG, abs=1e-7), mode
        assert result.metrics["mrr@10"] == pytest.approx(MEAN_MRR), mode
        assert result.metrics["recall@10"] == 0.75, mode
        assert len(result.latencies_ms) == 3  # q9 has no text to run


def test_summary_has_the_documented_keys(full_run: BeirRun) -> None:
    summary = full_run.summary()
    assert set(summary) == {"bm25", "vector", "hybrid", "graph"}
    for values in summary.values():
        assert set(values) == SUMMARY_KEYS
        assert values["p95_ms"] >= values["p50_ms"] > 0
        assert values["index_kind"] == "full"


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_a_document_with_the_query_id_counts_only_when_kept(
    beir_dir: Path, tmp_path: Path, mode: str
) -> None:
    settings = RunSettings(embedding="fake", ignore_identical_ids=False)
    run = run_beir(beir_dir, [mode], settings=settings, work_dir=tmp_path)
    per_query = run.results[mode].per_query
    assert pytest.approx(0.6199062, abs=1e-7) == Q1_NDCG_WITH_OWN_ID
    assert per_query["q1"]["ndcg@10"] == pytest.approx(Q1_NDCG_WITH_OWN_ID)
    assert per_query["q1"]["mrr@10"] == 0.5
    assert per_query["q2"]["ndcg@10"] == 1.0  # other queries unchanged


def test_missing_query_text_is_judged_and_counted(beir_dir: Path) -> None:
    data = load_beir(beir_dir)
    assert "q9" in data.qrels and "q9" not in data.queries
    assert data.missing_queries == 1


def test_second_run_embeds_nothing(beir_dir: Path, tmp_path: Path) -> None:
    settings = RunSettings(embedding="fake")
    first = run_beir(beir_dir, ["bm25"], settings=settings, work_dir=tmp_path)
    second = run_beir(beir_dir, ["vector"], settings=settings, work_dir=tmp_path)
    assert first.index.embedded == first.index.chunks == len(CORPUS)
    assert first.index.kind == "full"
    assert second.index.embedded == 0
    assert second.index.reused == len(CORPUS)
    assert second.index.kind == "incremental"
    third = run_beir(beir_dir, ["vector"], settings=settings, work_dir=tmp_path, fresh=True)
    assert (third.index.kind, third.index.embedded, third.index.reused) == ("full", len(CORPUS), 0)


def test_lexical_rerun_is_incremental(beir_dir: Path, tmp_path: Path) -> None:
    settings = RunSettings(embedding=None)
    first = run_beir(beir_dir, ["bm25"], settings=settings, work_dir=tmp_path)
    second = run_beir(beir_dir, ["bm25"], settings=settings, work_dir=tmp_path)
    assert (first.index.kind, second.index.kind) == ("full", "incremental")


def test_train_split_reads_queries_all(beir_dir: Path, tmp_path: Path) -> None:
    data = load_beir(beir_dir, "train")
    assert data.queries == {"q4": "lighthouse keepers"}
    only_all = load_beir(beir_dir, "train", query_files=("queries_all.jsonl",))
    assert only_all.queries == data.queries
    assert only_all.files["queries"].endswith("queries_all.jsonl")
    run = run_beir(beir_dir, ["bm25"], split="train", settings=RunSettings(embedding=None),
                   work_dir=tmp_path)  # fmt: skip
    assert run.results["bm25"].metrics["ndcg@10"] == 1.0


def test_corpus_files_hold_title_and_text(beir_dir: Path, tmp_path: Path) -> None:
    data = load_beir(beir_dir)
    names = write_corpus(data.corpus, tmp_path)
    name = file_name("c/1 é")
    assert name == "c%2F1%20%C3%A9.md" and names[name] == "c/1 é"
    assert (
        tmp_path / name
    ).read_bytes() == "# Café menu\n\nCafé crème\r\nand brûlée\r\nserved daily.".encode()
    before = (tmp_path / "g1.md").stat().st_mtime_ns
    (tmp_path / "gone.md").write_text("stale")
    write_corpus(data.corpus, tmp_path)
    assert (tmp_path / "g1.md").stat().st_mtime_ns == before  # unchanged files stay put
    assert not (tmp_path / "gone.md").exists()
    as_text = write_corpus(data.corpus, tmp_path, "txt")
    assert set(as_text) == {n.replace(".md", ".txt") for n in names}
    assert (tmp_path / "g1.txt").read_text(
        "utf-8"
    ) == "Glacier melting rates\n\nGlacier melting rates rose."
    assert not list(tmp_path.glob("*.md"))  # the other format's files are removed


def test_limit_queries(beir_dir: Path, tmp_path: Path) -> None:
    run = run_beir(beir_dir, ["bm25"], settings=RunSettings(embedding=None, limit_queries=2),
                   work_dir=tmp_path)  # fmt: skip
    assert run.queries == 2
    assert set(run.results["bm25"].per_query) == {"q1", "q2"}


@pytest.mark.parametrize(
    ("modes", "embedding", "message"),
    [
        (["bm25", "fuzzy"], "fake", "unknown mode 'fuzzy'"),
        (["hybrid"], None, "need an embedding"),
        (["bm25", "vector"], None, "need an embedding"),
    ],
)
def test_bad_modes(
    beir_dir: Path, tmp_path: Path, modes: list[str], embedding: str | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        run_beir(beir_dir, modes, settings=RunSettings(embedding=embedding), work_dir=tmp_path)


def test_cli_json_and_result_files(beir_dir: Path, tmp_path: Path) -> None:
    out, work = str(tmp_path / "out"), str(tmp_path / "work")
    modes = ["--mode", "bm25", "--mode", "hybrid"]
    args = [str(beir_dir), *modes, "--embedding", "fake", "--json", "--quiet"]
    args += ["--out", out, "--work-dir", work]
    result = CliRunner().invoke(retrieval_command, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert set(printed) == {"bm25", "hybrid"}
    assert set(printed["hybrid"]) == SUMMARY_KEYS
    assert printed["bm25"]["ndcg@10"] == pytest.approx(MEAN_NDCG, abs=1e-4)
    saved = json.loads((tmp_path / "out" / "retrieval-tiny-test.json").read_text("utf-8"))
    assert saved["results"] == printed
    assert "--mode bm25 --mode hybrid --embedding fake" in saved["command"]
    table = (tmp_path / "out" / "retrieval-tiny-test.md").read_text("utf-8")
    assert "| hybrid | 0.6227 |" in table
    assert "1 of the 4 judged queries have no text" in table


def test_cli_without_embedding_runs_the_lexical_modes(beir_dir: Path, tmp_path: Path) -> None:
    args = [str(beir_dir), "--embedding", "none", "--json", "--quiet"]
    args += ["--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]
    result = CliRunner().invoke(retrieval_command, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert list(printed) == ["bm25", "graph"]
    assert printed["graph"]["ndcg@10"] == pytest.approx(MEAN_NDCG, abs=1e-4)


def test_cli_labels_an_incremental_index_and_fresh_starts_over(
    beir_dir: Path, tmp_path: Path
) -> None:
    args = [str(beir_dir), "--mode", "bm25", "--embedding", "none", "--quiet"]
    args += ["--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]
    runner = CliRunner()
    assert runner.invoke(retrieval_command, args).exit_code == 0
    again = runner.invoke(retrieval_command, args)
    assert again.exit_code == 0, again.output
    assert "(incremental) |" in again.stdout and "not indexing from scratch" in again.stdout
    fresh = runner.invoke(retrieval_command, [*args, "--fresh", "--json"])
    assert fresh.exit_code == 0, fresh.output
    assert json.loads(fresh.stdout)["bm25"]["index_kind"] == "full"


def test_cli_missing_split_is_a_usage_error(beir_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        retrieval_command, [str(beir_dir), "--split", "dev", "--work-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert (
        "qrels/dev.tsv not found" in result.stderr and "splits here: test, train" in result.stderr
    )
