"""SelectScope: names of knowledge bases, files, folders, extensions and kinds in the
question become filters (only when they exist); the chat model's choice is checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.graphs._nodes._paths import list_folder, mentioned_kinds, mentioned_paths, scope_terms
from kbgraph.graphs._nodes.select_scope import select_scope, widest_scope
from kbgraph.graphs._settings import RagSettings
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import debug_of, deps_for, runtime_for, state_of, write_docs


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write_docs(folder)
    return folder


@pytest.mark.parametrize(
    ("question", "paths"),
    [
        ("What does configuration.md say about retries?", ["docs/configuration.md"]),
        ("what is in docs/authentication.md", ["docs/authentication.md"]),
        ("Explain src/harbor/retry.py", ["src/harbor/retry.py"]),
        ("Which *.py files define RetryPolicy?", ["**/*.py"]),
        ("anything in the harbor folder about attempts?", ["src/harbor/**"]),
        ("in the notes directory, when does the café open?", ["notes/**"]),
        ("What about café.md?", ["notes/café.md"]),
        ("windows.txt line two", ["notes/windows.txt"]),
        ("How do I configure the retry policy?", []),
        ("What does missing-file.md say?", []),  # names nothing that exists
        ("Which *.rs files exist?", []),
    ],
)
def test_mentioned_paths(docs: Path, question: str, paths: list[str]) -> None:
    assert mentioned_paths(question, list_folder(str(docs))) == paths


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("What do the PDF files say about refunds?", ["pdf"]),
        ("How do I export an invoice to PDF?", []),
        ("search in the markdown docs for retries", ["markdown"]),
        ("Which python modules handle retries?", ["python"]),
        ("How do I retry in Python?", []),
        ("what does the source code do on timeout", ["code"]),
        ("error codes in the csv", ["csv"]),
        ("How is the redirect limit tested?", ["test"]),
        ("Which tests cover Client.send?", ["test"]),
        ("Where is DEFAULT_TIMEOUT_CONFIG defined?", ["non-test"]),
        ("show the implementation of the digest auth flow", ["non-test"]),
        ("Where in the Go code is the retry loop implemented?", ["go", "non-test"]),
        ("How do I test my configuration?", []),
    ],
)
def test_mentioned_kinds(question: str, kinds: list[str]) -> None:
    assert mentioned_kinds(question) == kinds


@pytest.mark.parametrize(
    ("question", "paths", "kinds", "terms"),
    [
        (
            "What does docs/configuration.md say about the retry policy?",
            ["docs/configuration.md"], [], ["docs", "configuration", "md"],
        ),
        ("Which error codes are retryable in the CSV file?", [], ["csv"], ["csv", "file"]),
        ("Quels codes dans le fichier café.md ?", ["notes/café.md"], [], ["café", "md"]),
        ("anything in the harbor folder about attempts?", ["src/harbor/**"], [],
         ["harbor", "folder"]),
        ("Which *.py files define RetryPolicy?", ["**/*.py"], [], ["py", "files"]),
        ("How do we deploy?", ["deploy.md"], ["markdown"], []),  # named by no one
        ("How do I configure the retry policy?", [], [], []),
    ],
)  # fmt: skip
def test_scope_terms_are_the_words_that_named_the_scope(
    question: str, paths: list[str], kinds: list[str], terms: list[str]
) -> None:
    assert scope_terms(question, paths, kinds) == terms


def test_scope_records_its_terms(docs: Path) -> None:
    settings = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(docs)}])
    out = _run(state_of("What does docs/configuration.md say about retries?"), settings)
    assert out["rag_scope"]["terms"] == ["docs", "configuration", "md"]
    assert widest_scope([], "retry", ["md"])["terms"] == ["md"]


def test_listing_skips_hidden_and_dependency_folders(tmp_path: Path) -> None:
    write_docs(tmp_path, {"a.md": "x", ".kbgraph/meta.json": "{}", "node_modules/p/i.js": "x"})
    listing = list_folder(str(tmp_path))
    assert listing.files == ("a.md",)


def _run(state: Any, settings: RagSettings, model: Any = None) -> dict[str, Any]:
    return select_scope(state, runtime_for(settings), deps_for(model=model))


def test_heuristic_scope_with_path_and_kind(docs: Path) -> None:
    settings = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(docs)}])
    out = _run(state_of("In the markdown files, what does configuration.md say?"), settings)
    scope = out["rag_scope"]
    assert scope["knowledge_bases"] == ["docs"]
    assert scope["paths"] == ["docs/configuration.md"]
    assert scope["kinds"] == ["markdown"]
    assert scope["widened"] is False and "configuration.md" in scope["reason"]
    step = debug_of(out)["steps"][0]
    assert step["node"] == "select_scope" and step["data"]["files_listed"] == {"docs": 5}


def _two_kbs(tmp_path: Path) -> RagSettings:
    write_docs(tmp_path / "hr", {"leave.md": "Vacation policy: 25 days."})
    write_docs(tmp_path / "eng", {"deploy.md": "Deploy with helm."})
    return RagSettings(
        knowledge_bases=[
            {
                "name": "hr-handbook",
                "folder": str(tmp_path / "hr"),
                "description": "vacation, salaries, leave",
            },
            {
                "name": "engineering",
                "folder": str(tmp_path / "eng"),
                "description": "deployment and services",
            },
        ]
    )


@pytest.mark.parametrize(
    ("question", "kbs"),
    [
        ("What does the HR handbook say about leave?", ["hr-handbook"]),
        ("In engineering, how do we deploy?", ["engineering"]),
        ("How many vacation days do I get?", ["hr-handbook"]),
        ("Where is the deployment guide?", ["engineering"]),
        ("What does deploy.md say?", ["engineering"]),
        ("What is the meaning of life?", ["hr-handbook", "engineering"]),
    ],
)
def test_knowledge_base_choice(tmp_path: Path, question: str, kbs: list[str]) -> None:
    out = _run(state_of(question), _two_kbs(tmp_path))
    assert out["rag_scope"]["knowledge_bases"] == kbs


def test_no_knowledge_base_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBGRAPH_FOLDER", raising=False)
    out = _run(state_of("anything"), RagSettings())
    assert out["rag_scope"]["knowledge_bases"] == []
    assert out["rag_scope"]["reason"] == "no knowledge base configured"


def test_llm_choice_is_checked(tmp_path: Path) -> None:
    settings = _two_kbs(tmp_path)
    model = ScriptedChatModel(
        responses=[
            {
                "knowledge_bases": ["engineering", "invented-kb"],
                "paths": ["deploy.md", "no/such/dir/**", "../etc/passwd"],
                "kinds": ["markdown", "spreadsheet"],
                "reason": "deployment question",
            }
        ]
    )
    out = _run(state_of("How do we deploy?"), settings, model)
    scope = out["rag_scope"]
    assert scope == {
        "knowledge_bases": ["engineering"],
        "paths": ["deploy.md"],
        "kinds": ["markdown"],
        "widened": False,
        "reason": "deployment question",
        "terms": [],  # the question names no file: "deploy" stays a topic word
    }
    prompt = model.calls[0].messages[-1].content
    assert "hr-handbook: vacation, salaries, leave" in prompt and "engineering: deploy.md" in prompt


def test_llm_failure_falls_back_to_heuristic(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[TimeoutError("slow")])
    out = _run(state_of("How many vacation days do I get?"), _two_kbs(tmp_path), model)
    assert out["rag_scope"]["knowledge_bases"] == ["hr-handbook"]
    update = debug_of(out)
    assert update["steps"][0]["path"] == "fallback"
    assert update["fallbacks"][0]["error"].startswith("TimeoutError")


def test_widest_scope(tmp_path: Path) -> None:
    kbs = _two_kbs(tmp_path).resolved_knowledge_bases()
    scope = widest_scope(kbs, "retry")
    assert scope["knowledge_bases"] == ["hr-handbook", "engineering"]
    assert scope["paths"] == [] and scope["kinds"] == [] and scope["widened"] is True


CODE_FILES = {
    "src/client.py": "DEFAULT_MAX_REDIRECTS = 20\n",
    "tests/test_client.py": "def test_redirect_limit():\n    assert True\n",
    "web/app.ts": "export const maxRedirects = 20;\n",
}


@pytest.mark.parametrize(
    ("files", "question", "kinds"),
    [
        (CODE_FILES, "How is the redirect limit tested?", ["test"]),
        (CODE_FILES, "Where is DEFAULT_MAX_REDIRECTS defined?", ["non-test"]),
        (CODE_FILES, "Which typescript modules set the redirect limit?", ["typescript"]),
        # No test file, no Go file listed: the role or language would empty the search.
        ({"src/client.py": "x = 1\n"}, "How is the redirect limit tested?", []),
        (CODE_FILES, "Where in the Go code is the redirect limit implemented?", ["non-test"]),
    ],
)
def test_heuristic_scope_knows_languages_and_tests(
    tmp_path: Path, files: dict[str, str], question: str, kinds: list[str]
) -> None:
    write_docs(tmp_path / "code", files)
    settings = RagSettings(knowledge_bases=[{"name": "code", "folder": str(tmp_path / "code")}])
    assert _run(state_of(question), settings)["rag_scope"]["kinds"] == kinds


def test_a_junk_list_of_kinds_is_overruled_and_a_long_reason_cut(tmp_path: Path) -> None:
    # A small model wrote a 125-entry kinds list (issue 30): no restriction by kind, the
    # overruling recorded; a 2,000-character reason is cut.
    kinds = ["markdown", "python", "code", "test", "csv"] * 25
    reason = "The question is about deployment and the deployment guide. " * 35
    model = ScriptedChatModel(responses=[{"kinds": kinds, "paths": [], "reason": reason}])
    out = _run(state_of("How do we deploy?"), _two_kbs(tmp_path), model)
    assert out["rag_scope"]["kinds"] == []
    assert len(out["rag_scope"]["reason"]) <= 300
    (overruled,) = debug_of(out)["overrulings"]
    assert overruled["reason"] == (
        "the chat model's kinds list is junk (125 entries, 5 distinct): no restriction by kinds"
    )
    assert overruled["proposal"]["kinds"] == ["markdown", "python", "code", "test", "csv"]


def test_a_short_list_of_kinds_stands(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[{"kinds": ["markdown", "markdown"], "reason": "docs"}])
    out = _run(state_of("How do we deploy?"), _two_kbs(tmp_path), model)
    assert out["rag_scope"]["kinds"] == ["markdown"]
    assert debug_of(out)["overrulings"] == []
