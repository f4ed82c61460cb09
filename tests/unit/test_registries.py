"""Open registries instead of closed lists (issue 31): a ranker, a file kind or a metric
registered once (here in a test, removed after) appears everywhere kbgraph lists them:
search modes and weights, the CLI's choices, the lexical probe, the inspector, the BEIR
runner; the scan, the loader and the filters; a batch run's metrics and report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from kbgraph.cli import main
from kbgraph.errors import ConfigError
from kbgraph.evals import (
    EvalRow,
    MetricResult,
    Passage,
    metric_names,
    register_metric,
    unregister_metric,
)
from kbgraph.evals.baseline import compared
from kbgraph.evals.beir import modes
from kbgraph.evals.beir._run import check_modes
from kbgraph.evals.cli import eval_group
from kbgraph.evals.evaluators import default_evaluators
from kbgraph.evals.records import EvalRecord
from kbgraph.evals.report import render_markdown, summarize
from kbgraph.evals.runner import run_dataset
from kbgraph.graphs.nodes._probe import probe
from kbgraph.graphs.nodes.retrieve import rankers_for
from kbgraph.inspector._lab import LabQuery
from kbgraph.inspector._lab_view import render_form
from kbgraph.retrieval import (
    FieldRanker,
    KnowledgeBase,
    ScanConfig,
    SearchConfig,
    SearchFilters,
    get_ranker,
    register_ranker,
    search_modes,
    unregister_ranker,
)
from kbgraph.retrieval.config import DEFAULT_INCLUDE
from kbgraph.retrieval.loaders import (
    Loader,
    file_kinds,
    kind_of,
    load_text,
    register_loader,
    unregister_loader,
)
from kbgraph.retrieval.records import Chunk, SkippedFile
from kbgraph.retrieval.scan import scan_folder
from kbgraph.retrieval.segments import Segment
from kbgraph.testing import ScriptedJudge
from tests.unit._rag_fakes import deps_for, registry_with, settings_for

TOY = "toy_path"


def _path_words(chunk: Chunk) -> str:
    return chunk.source.replace("/", " ").replace(".", " ")


@pytest.fixture
def toy_ranker() -> Iterator[str]:
    """A lexical ranker over the file path only, asked by the probe."""
    register_ranker(FieldRanker(TOY, "BM25 over the path", _path_words, probe=True))
    yield TOY
    unregister_ranker(TOY)
    assert TOY not in search_modes()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoices.md").write_text("# Money\n\nSent monthly.\n", encoding="utf-8")
    (root / "guide.md").write_text("# Guide\n\nInvoices are sent monthly.\n", encoding="utf-8")
    return root


def test_a_registered_ranker_is_a_mode_a_weight_and_ranks(toy_ranker: str, docs: Path) -> None:
    assert toy_ranker in search_modes() and get_ranker(toy_ranker).lexical
    kb = KnowledgeBase(docs, embedding="fake")
    kb.index()
    # Only the path says "billing": the text of neither file does.
    (hit,) = kb.search("billing", mode=toy_ranker)
    assert hit.chunk.source == "billing/invoices.md" and hit.ranks == {toy_ranker: 1}
    fused = kb.search("billing", config=SearchConfig(weights={toy_ranker: 1.0}))
    assert fused[0].chunk.source == "billing/invoices.md"
    assert set(fused[0].ranks) == {"vector", toy_ranker}  # BM25 lists no text with "billing"
    convex = SearchConfig(fusion="convex", weights={toy_ranker: 1.0})
    assert set(kb.search("billing", config=convex)[0].scores) == {"vector", "bm25", toy_ranker}
    # By default hybrid fuses what it fused before: the new ranker has no hybrid weight.
    assert set(kb.search("billing")[0].ranks) <= {"vector", "bm25"}


def test_an_unregistered_name_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match="allowed: hybrid, vector, bm25, title"):
        SearchConfig(mode="nope")
    with pytest.raises(ConfigError, match="rankers are vector, bm25, title"):
        SearchConfig(weights={"nope": 1.0})
    with pytest.raises(ConfigError, match="registered already"):
        register_ranker(FieldRanker("bm25", "again", _path_words))
    with pytest.raises(ConfigError, match="probe asks only lexical rankers"):
        register_ranker(FieldRanker("odd", "odd", _path_words, probe=True, lexical=False))


def test_the_cli_offers_and_runs_a_registered_ranker(toy_ranker: str, docs: Path) -> None:
    runner = CliRunner()
    assert toy_ranker in runner.invoke(main, ["search", "--help"]).output
    assert toy_ranker in runner.invoke(eval_group, ["run", "--help"]).output
    assert toy_ranker in runner.invoke(eval_group, ["retrieval", "--help"]).output
    base = ["search", str(docs), "billing", "--embedding", "fake", "--json"]
    assert runner.invoke(main, ["index", str(docs), "--embedding", "fake"]).exit_code == 0
    one = runner.invoke(main, [*base, "--mode", toy_ranker])
    assert one.exit_code == 0, one.output
    assert [r["source"] for r in json.loads(one.output)["results"]] == ["billing/invoices.md"]
    weighed = runner.invoke(main, [*base, "--weight", f"{toy_ranker}=2"])
    assert weighed.exit_code == 0, weighed.output
    assert toy_ranker in json.loads(weighed.output)["results"][0]["ranks"]


def test_the_graph_probe_inspector_and_beir_runner_see_a_registered_ranker(
    toy_ranker: str, docs: Path
) -> None:
    assert rankers_for(settings_for(docs, search={"mode": toy_ranker})) == [toy_ranker]
    assert toy_ranker in rankers_for(settings_for(docs, search={"weights": {toy_ranker: 1}}))
    assert toy_ranker in modes() and check_modes([toy_ranker], None) == [toy_ranker]
    assert LabQuery.from_params({"q": ["x"], "mode": [toy_ranker]}).mode == toy_ranker
    assert f'value="{toy_ranker}"' in str(render_form({}, [], [], "/lab"))
    kb = KnowledgeBase(docs, embedding="fake")
    kb.index()
    settings = settings_for(docs)
    found = probe(
        "billing?",
        settings.resolved_knowledge_bases(),
        settings,
        deps_for(
            registry_with({docs: kb})  # type: ignore[dict-item]
        ),
    )
    assert found.evidence()["probe"] == f"bm25+{toy_ranker}"
    # BM25 finds no "billing" in any text; the toy ranker finds it in the path.
    assert [h.source for h in found.hits] == ["billing/invoices.md"]


TOY_KIND = "toy_notes"


@dataclass
class _Calls:
    rels: list[str]


@pytest.fixture
def toy_loader() -> Iterator[_Calls]:
    calls = _Calls([])

    def load(data: bytes, rel: str) -> tuple[list[Segment], list[SkippedFile]]:
        calls.rels.append(rel)
        return load_text(data, rel)

    register_loader(Loader(TOY_KIND, ("toy",), load, chunk_as="markdown"))
    yield calls
    unregister_loader(TOY_KIND)
    assert kind_of("a.toy") == "text" and TOY_KIND not in file_kinds()


def test_a_registered_loader_is_scanned_loaded_and_filtered(toy_loader: _Calls, docs: Path) -> None:
    (docs / "todo.toy").write_text("# Taxes\n\nCall the accountant about invoices.\n", "utf-8")
    # The scan's include globs are settings (recorded in the index), not the loader table.
    scan = ScanConfig(include=(*DEFAULT_INCLUDE, "**/*.toy"))
    scanned = {f.rel: f.kind for f in scan_folder(docs, scan).files}
    assert scanned["todo.toy"] == TOY_KIND and scanned["guide.md"] == "markdown"
    kb = KnowledgeBase(docs, embedding=None, scan=scan)
    kb.index()
    assert toy_loader.rels == ["todo.toy"]
    only = SearchFilters(kinds=(TOY_KIND,))
    (hit,) = kb.search("accountant invoices", filters=only)
    assert hit.chunk.source == "todo.toy" and hit.chunk.section == "Taxes"  # cut at headings
    out = CliRunner().invoke(main, ["search", "--help"]).output
    assert TOY_KIND in out
    with pytest.raises(ConfigError, match="the kind 'markdown'"):
        register_loader(Loader("other", ("md",), load_text))


class _AnswerLength:
    """A toy metric: 1 when the answer is at most ten words long."""

    name: ClassVar[str] = "short_answer"

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def evaluate(self, record: EvalRecord) -> MetricResult:
        return MetricResult.scored(self.name, float(len(record.answer.split()) <= 10))


@pytest.fixture
def toy_metric() -> Iterator[str]:
    register_metric(_AnswerLength)
    yield _AnswerLength.name
    unregister_metric(_AnswerLength.name)
    assert _AnswerLength.name not in metric_names()


def test_a_registered_metric_is_scored_and_reported_by_a_batch_run(
    toy_metric: str, tmp_path: Path
) -> None:
    assert toy_metric in metric_names() and toy_metric in compared()
    judge = ScriptedJudge(default="supported", relevant=["5"], answer_scores={})
    source = Passage(1, "Harbor makes 5 attempts by default.", "docs/retry.md", 1, 2)
    row = EvalRow(id="r0", question="How many attempts?", reference="5.", answer="Five [1].",
                  contexts=(source,))  # fmt: skip
    (result,) = run_dataset([row], default_evaluators(judge), progress=False)
    assert result.metrics[toy_metric].score == 1.0
    summary = summarize([result])
    assert summary[toy_metric]["mean"] == 1.0
    assert f"| {toy_metric} |" in render_markdown(summary, [result])
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "r0", "question": "How many?", "answer": "Five [1].",
                                "contexts": [source.text]}) + "\n", encoding="utf-8")  # fmt: skip
    out = tmp_path / "out"
    args = [str(rows), "--embedding", "fake", "--quiet", "--out", str(out)]
    cli = CliRunner().invoke(eval_group, [*args, "--min", f"{toy_metric}=0.5"])
    assert cli.exit_code == 0, cli.output
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))[toy_metric]["mean"] == 1
    assert toy_metric in (out / "report.md").read_text(encoding="utf-8")
    assert toy_metric in cli.output
