"""The extractive answer quotes the part of an option's entry that states the fact: the
value after the matching sentence, a settings table's rows, the definition a code line
belongs to, the block or list a sentence introduces; never a pointer or raw markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbgraph.graphs import _extractive
from kbgraph.graphs._passages import clean

DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


def _citation(n: int, text: str, source: str, start: int = 1) -> dict[str, Any]:
    end = start + text.rstrip("\n").count("\n")
    return {"n": n, "source": source, "line_start": start, "line_end": end, "text": text}


def _file_citation(n: int, rel: str, first: int, last: int) -> dict[str, Any]:
    lines = (DOCS / rel).read_text("utf-8").split("\n")[first - 1 : last]
    return _citation(n, "\n".join(lines), rel, first)


def _answer(question: str, *citations: dict[str, Any]) -> str:
    return _extractive.render("H", _extractive.best_quotes(question, list(citations)))


def test_the_retry_policy_answer_names_its_settings_not_a_pointer() -> None:
    # make demo's sources: the settings table and retry.py, whose docstring only points
    # at the table ("The defaults match docs/configuration.md").
    answer = _answer(
        "How do I configure the retry policy?",
        _file_citation(1, "docs/configuration.md", 46, 57),
        _file_citation(2, "src/harbor/retry.py", 1, 11),
    )
    assert "retry.max_attempts | 5" in answer
    assert "The defaults match" not in answer


def test_the_value_sentence_after_the_matching_one_is_kept_with_its_entry() -> None:
    text = (
        "Policies\n"
        "\n"
        "``wrap.margin``\n"
        "    Configures the margin default for the wrap filter. Margin as used by the\n"
        "    wrap filter, it can be set to ``0`` to get the old output back.\n"
        "    The default is ``5``.\n"
        "\n"
        "``wrap.marker``\n"
        "    The marker the wrap filter adds where it cuts a line.\n"
    )
    answer = _answer("What is the default margin of the wrap filter?", _citation(1, text, "p.rst"))
    assert "The default is 5." in answer
    assert "``" not in answer


def test_a_settings_table_is_quoted_with_its_header_and_rows() -> None:
    text = (
        "| Setting | Default | Meaning |\n"
        "|---|---|---|\n"
        "| `pool.size` | `10` | connections kept open |\n"
        "| `pool.timeout` | `5s` | wait for a free connection |\n"
    )
    quotes = _extractive.best_quotes("How do I configure the pool?", [_citation(1, text, "c.md")])
    (quote,) = quotes
    assert quote.text == "Setting | Default | Meaning"
    assert quote.code == (
        "pool.size | 10 | connections kept open",
        "pool.timeout | 5s | wait for a free connection",
    )
    assert (quote.first, quote.last) == (1, 4)


def test_a_specific_question_gets_the_matching_row_under_the_header() -> None:
    text = (
        "| Setting | Default | Meaning |\n"
        "|---|---|---|\n"
        "| `pool.size` | `10` | connections kept open |\n"
        "| `cache.ttl` | `60` | seconds an entry lives |\n"
        "| `log.level` | `info` | how much is logged |\n"
    )
    (quote,) = _extractive.best_quotes(
        "What is the default cache ttl?", [_citation(1, text, "c.md")]
    )
    assert quote.code == ("cache.ttl | 60 | seconds an entry lives",)


def test_code_quotes_name_their_definition_without_rst_markup() -> None:
    text = (
        "def pick_escaping(enabled: tuple[str, ...] = ('html',)) -> Callable[[str], bool]:\n"
        '    """Intelligently sets the initial value of autoescaping based on the\n'
        "    filename of the template, see :func:`guess_kind` and ``enabled``.\n"
        '    """\n'
        "    return lambda name: name.endswith(enabled)\n"
    )
    answer = _answer(
        "Which function sets autoescaping based on the template filename?",
        _citation(1, text, "src/escaping.py"),
    )
    assert "def pick_escaping(" in answer
    assert ":func:" not in answer and "``" not in answer


def test_a_chunk_that_starts_inside_a_code_block_quotes_its_prose_as_prose() -> None:
    text = (
        '>>> client = httpx.Client(auth=("user", "pw"))\n'
        "```\n"
        "\n"
        "To provide credentials for digest authentication, instantiate\n"
        "a `DigestAuth` object with the username and password as above:\n"
        "\n"
        "```pycon\n"
        '>>> auth = httpx.DigestAuth("user", "pw")\n'
        "```\n"
    )
    answer = _answer("How do I use digest authentication?", _citation(1, text, "q.md"))
    assert "- To provide credentials for digest authentication" in answer
    assert 'DigestAuth("user", "pw")' in answer


def test_a_sentence_that_introduces_a_list_brings_the_list() -> None:
    text = (
        "Environment variables are read by default. There are two ways to stop reading\n"
        "environment variables:\n"
        "\n"
        "* On the client via `Client(trust_env=False)`.\n"
        "* On a single request via `get(url, trust_env=False)`.\n"
    )
    answer = _answer("How do I stop reading environment variables?", _citation(1, text, "env.md"))
    assert "Client(trust_env=False)" in answer


def test_a_quoted_command_comes_with_the_sentence_that_says_when_to_run_it() -> None:
    text = (
        "## Migrations\n"
        "\n"
        "Run the migrations once per release, before the new version takes traffic:\n"
        "\n"
        "```bash\n"
        "docker run --rm image:2.4 tool migrate\n"
        "```\n"
    )
    answer = _answer("When should I run tool migrate?", _citation(1, text, "deploy.md"))
    assert "once per release" in answer
    assert "tool migrate" in answer


def test_a_sentence_that_points_at_an_example_brings_the_example() -> None:
    text = (
        "You can also use these hooks to install response processing code, such as this\n"
        "example, which creates a client that always raises on 4xx and 5xx responses.\n"
        "\n"
        "```python\n"
        "def raise_on_error(response):\n"
        "    response.raise_for_status()\n"
        "```\n"
    )
    answer = _answer(
        "How do I raise an exception for 4xx and 5xx responses?", _citation(1, text, "hooks.md")
    )
    assert "response.raise_for_status()" in answer


def test_an_entry_is_quoted_from_the_sentence_that_names_it() -> None:
    text = (
        "Send an `Idempotency-Key` header with every write. If the server has seen the key\n"
        "in the last 24 hours it returns the stored response instead of creating a second\n"
        "order.\n"
    )
    answer = _answer("How do I make creating an order safe to retry?", _citation(1, text, "o.md"))
    assert "- Send an Idempotency-Key header with every write. If the server" in answer


def test_a_sentence_announcing_a_block_the_chunk_lacks_is_not_quoted() -> None:
    text = (
        "Only the listed status codes are retried, with connection errors.\n"
        "\n"
        "To change the retry policy in tool.yaml:\n"
    )
    answer = _answer("How do I change the retry policy?", _citation(1, text, "c.md"))
    assert "tool.yaml" not in answer
    assert "- Only the listed status codes are retried" in answer


def test_a_docstring_definition_is_quoted_with_its_term() -> None:
    text = (
        "class Settings:\n"
        '    """The settings.\n'
        "\n"
        "    `strip_lead`\n"
        "        If this is set to True leading spaces and tabs are stripped from the\n"
        "        start of a line to a tag. Defaults to `False`.\n"
        '    """\n'
    )
    answer = _answer(
        "How do I strip spaces and tabs before a tag?", _citation(1, text, "src/settings.py")
    )
    assert "strip_lead" in answer


def test_a_docstring_line_is_quoted_beside_the_def_whose_name_the_question_gives() -> None:
    # "with" in call_with_retry is a stop word: counting it made the def line score so far
    # above the docstring line that answers that the latter fell below the cut.
    answer = _answer(
        "In the retry code, how is a Retry-After value used by call_with_retry?",
        _file_citation(1, "src/harbor/retry.py", 80, 100),
    )
    assert "replaces the computed delay" in answer
    assert "def call_with_retry(" in answer


def test_the_stop_word_parts_of_a_name_are_no_terms() -> None:
    assert {"call", "retri"} <= _extractive.terms("call_with_retry")
    assert "with" not in _extractive.terms("call_with_retry")


def test_an_entry_is_quoted_up_to_the_sentence_that_states_its_default_in_a_word() -> None:
    # The default is a plain word once the markup is off: no digit, no name in code.
    text = (
        "``urlize.rel``:\n"
        "    A string that defines the items for the `rel` attribute of generated\n"
        "    links with the `urlize` filter.  These items are always added.  The\n"
        "    default is `noopener`.\n"
    )
    answer = _answer(
        "What is the default value of the urlize.rel policy?",
        _citation(1, text, "docs/api.rst", 555),
    )
    assert "The default is noopener." in answer


def _filler(n: int, words: str) -> dict[str, Any]:
    return _citation(n, f"{words}.\n", f"docs/filler{n}.md")


def test_a_faq_entry_asking_the_question_answers_from_a_lower_ranked_source() -> None:
    # The first three sources share the question's words; the FAQ ranked fourth asks it.
    answer = _answer(
        "Can I cancel an order that has already shipped?",
        _citation(1, "Cancelling an order that is already cancelled returns 200.\n", "a.md"),
        _filler(2, "Orders can be listed and cancelled"),
        _filler(3, "An order that shipped sends a webhook"),
        _file_citation(4, "docs/faq.txt", 37, 40),
    )
    assert "Only pending and confirmed orders can be cancelled" in answer


def test_a_what_is_question_is_answered_by_the_definition_of_its_term() -> None:
    glossary = _citation(
        5,
        "Full jitter\nA backoff strategy where each retry waits a random time between zero"
        " and an exponentially growing ceiling.\n",
        "docs/glossary.md",
    )
    answer = _answer(
        "What is full jitter?",
        _filler(1, "Retry delays use full jitter instead of equal jitter"),
        _filler(2, "Full jitter spreads retries"),
        _filler(3, "Retries use full jitter"),
        _filler(4, "Full jitter is configurable"),
        glossary,
    )
    assert "exponentially growing ceiling" in answer


def test_a_table_of_contents_counts_as_a_pointer() -> None:
    table = (
        "| Topic | Page |\n|---|---|\n"
        "| Orders endpoints | [docs/api/orders.md](docs/api/orders.md) |\n"
        "| Listing orders and pagination | [docs/api/list.md](docs/api/list.md) |\n"
    )
    answer = _answer(
        "How does pagination work when listing orders?",
        _citation(1, "Orders are returned newest first, a page at a time.\n", "docs/api.md"),
        _citation(2, table, "README.md"),
    )
    assert "newest first" in answer
    assert "docs/api/list.md" not in answer


def test_a_default_question_brings_the_sentence_stating_the_default_from_a_later_source() -> None:
    # The FAQ ranked first matches the question's words twice over (its question and its
    # answer); the option's entry ranked fifth states the default the question asks for.
    answer = _answer(
        "How many attempts does Harbor make by default when a call to a downstream provider fails?",
        _file_citation(1, "docs/faq.txt", 10, 19),
        _file_citation(2, "src/harbor/retry.py", 1, 11),
        _file_citation(3, "docs/configuration.md", 46, 50),
        _file_citation(4, "README.md", 10, 17),
        _file_citation(5, "docs/configuration.md", 57, 65),
    )
    assert "the default of 5 means one call" in answer


def test_a_default_is_stated_only_with_a_value_after_it() -> None:
    from kbgraph.graphs import _entries

    assert _entries.states_default("so the default of 5 means one call")
    assert not _entries.states_default("The default is `noopener`.")  # a word, no value
    assert not _entries.states_default('env.policies["a.b"], which defaults to no schemes')


def test_a_paragraph_without_the_value_brings_the_next_one_that_names_it() -> None:
    text = (
        "### Environment variables\n\n"
        "There are also environment variables that can be used to control the mounts.\n"
        "They can be used to configure HTTP proxying for clients.\n\n"
        "See documentation on `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` for more information.\n"
    )
    answer = _answer(
        "Which environment variables configure a proxy?",
        _citation(1, text, "advanced/transports.md", 448),
    )
    assert "They can be used to configure HTTP proxying" in answer
    assert "HTTPS_PROXY" in answer


def test_a_paragraph_that_states_its_value_brings_no_next_paragraph() -> None:
    text = "Proxies are configured with HTTP_PROXY.\n\nSee the `NO_PROXY` page too.\n"
    answer = _answer("How are proxies configured?", _citation(1, text, "a.md"))
    assert "NO_PROXY" not in answer


def test_the_form_of_the_question_is_read_when_its_search_queries_follow_it() -> None:
    # extractive_text scores against the question and the queries made from it, joined.
    citations = [
        _filler(1, "Retry delays use full jitter instead of equal jitter"),
        _filler(2, "Full jitter spreads retries"),
        _filler(3, "Retries use full jitter"),
        _filler(4, "Full jitter is configurable"),
        _citation(5, "Full jitter\nA backoff strategy with a growing ceiling.\n", "g.md"),
    ]
    state = {"rag_queries": ["What is full jitter?", "full jitter"], "rag_citations": citations}
    assert "growing ceiling" in _extractive.extractive_text(state)


def test_a_command_line_option_is_a_value_the_entry_is_quoted_up_to() -> None:
    text = (
        "The ``flask run`` command starts the development server in debug mode when asked.\n"
        "Pass ``--debug`` for it.\n"
    )
    answer = _answer(
        "How do I enable debug mode when running the development server?",
        _citation(1, text, "docs/server.rst", 21),
    )
    assert "Pass --debug for it." in answer


def test_a_default_field_line_states_the_default() -> None:
    from kbgraph.graphs import _entries

    assert _entries.states_default("Default: 'session'")
    assert _entries.states_default("Default: True")
    assert not _entries.states_default("Default values are listed below.")


def test_a_class_name_is_a_value_and_so_is_the_default_of_a_named_kind() -> None:
    from kbgraph.graphs import _entries

    assert _entries.holds_value("This is usually one of UndefinedError or SecurityError.")
    assert _entries.holds_value("The default exception is UndefinedError.")
    assert not _entries.holds_value("Some operations on undefined values are then allowed.")
    text = (
        "The exception provided as exc is raised if something with the generated\n"
        "undefined object is done that the undefined object does not allow.  The default\n"
        "exception is :exc:`UndefinedError`.\n"
    )
    answer = _answer(
        "Which exception is raised when an undefined object is used in a way it does not allow?",
        _citation(1, text, "docs/api.rst", 150),
    )
    assert "The default exception is UndefinedError." in answer


def test_a_how_is_it_computed_question_brings_the_formula_from_a_later_source() -> None:
    answer = _answer(
        "How is the delay before a retry computed?",
        _file_citation(1, "src/harbor/retry.py", 58, 61),
        _file_citation(2, "src/harbor/retry.py", 80, 89),
        _file_citation(3, "config/harbor.example.yaml", 22, 28),
        _file_citation(4, "src/harbor/retry.py", 1, 11),
        _file_citation(5, "docs/configuration.md", 57, 65),
    )
    assert "min(backoff_cap_ms, backoff_base_ms * 2 ** n)" in answer


def test_only_an_expression_is_a_formula() -> None:
    from kbgraph.graphs import _entries

    asked = "How is the delay computed?"
    assert _entries.gives_formula(asked, "drawn from min(cap, base * 2 ** n) ms")
    assert not _entries.gives_formula(asked, "The delay is computed by call_with_retry().")
    assert not _entries.gives_formula("What is the delay?", "min(cap, base * 2)")


def test_the_answer_opens_with_the_source_of_the_best_unit() -> None:
    glossary = _citation(
        5, "Full jitter\nA backoff strategy with a growing ceiling.\n", "docs/glossary.md"
    )
    answer = _answer(
        "What is full jitter?",
        _filler(1, "Retry delays use full jitter instead of equal jitter"),
        _filler(2, "Retries spread with full jitter"),
        _filler(3, "Retries use full jitter"),
        _filler(4, "Backoff is configurable"),
        glossary,
    )
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert "growing ceiling" in bullets[0]


def test_a_how_question_gets_the_steps_not_the_file_that_implements_them() -> None:
    # A new user's question: the page's last line names the file holding a reference
    # implementation (`verify_signature`), which repeats the question's words; the steps
    # above it answer.
    answer = _answer(
        "How do I verify a webhook signature? verify webhook signature",
        _file_citation(1, "docs/api/webhooks.md", 28, 39),
        _file_citation(2, "src/harbor/webhooks.py", 1, 12),
    )
    assert "Compare it with v1 in constant time." in answer
    assert "more than 300 seconds away" in answer
    assert "contains a reference implementation" not in answer
    # The module's docstring title names the topic and states no step: the steps come first.
    first = answer.split("\n")[2]
    assert "To verify a delivery: Split the header" in first and "[1]" in first, answer


def test_a_list_item_picked_alone_is_not_quoted_again_inside_its_list() -> None:
    answer = _answer(
        "How do I rotate an API key?", _file_citation(1, "docs/authentication.md", 50, 62)
    )
    assert answer.count("Run harbor keys rotate key_7Hq2.") == 1, answer


def test_a_step_of_two_sentences_counts_as_one_list_item() -> None:
    # Four steps, the first and the last of two sentences each: all four are quoted.
    answer = _answer(
        "How do I rotate an API key?", _file_citation(1, "docs/authentication.md", 50, 62)
    )
    assert "Deploy the new key to your clients." in answer
    assert "Run harbor keys revoke key_7Hq2 --now to end it early." in answer


def test_code_in_a_sentence_is_quoted_as_written() -> None:
    # httpx's "pass a list of `(field, <file>)` items": the code span's <file> was dropped
    # as an HTML tag, and `**kwargs` read as emphasis.
    text = "To do that, pass a list of `(field, <file>)` items instead of a dictionary.\n"
    answer = _answer("How do I pass a list of file items?", _citation(1, text, "f.md"))
    assert "pass a list of (field, <file>) items" in answer
    sentence = "Extra options go in ``**kwargs`` or `*args`; <b>bold</b> and **strong** are markup."
    assert clean(sentence) == "Extra options go in **kwargs or *args; bold and strong are markup."
