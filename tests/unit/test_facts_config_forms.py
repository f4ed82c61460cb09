"""Issue 41, sixth round: facts as configuration and HTTP write them, and names in code one
part off. On main each unstated case here was supported and each stated one flagged:
"The admin UI listens on port 8080." against "Set API_PORT=8080 for the API and
ADMIN_PORT=8443 for the admin UI." (0.94), "A bad token gets HTTP 403." against "… gets
status 403" (0.00: "HTTP is in no source"), "Call create_order() to place an order." against
"… call place_order(cart)" (0.57)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbgraph.evals import OfflineJudge, check_answer
from kbgraph.evals._baseline import REGRESSION_EXIT_CODE
from kbgraph.evals._cli import eval_group
from kbgraph.evals._judges._facts import unstated_facts
from kbgraph.evals._judges._http import as_status
from kbgraph.evals._judges._numbers import number_slots
from kbgraph.testing import FakeEmbeddings


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge(FakeEmbeddings())


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Set API_PORT=8080 for the API.", "port"),
        ("PORT=8080", "port"),
        ("api:\n  port: 8080\n", "port"),
        ('{"port": 8080}', "port"),
        ("Open http://localhost:8000 in a browser.", "port"),
        ("A bad token gets HTTP 403 Forbidden.", "status"),
        ("A bad token gets status 403.", "status"),
        ("Set DATABASE_URL=postgres://app@db:5432/app first.", "port"),
        ("Open http://api:8000/docs.", "port"),
        ("It returns error 404.", "status"),
        ("raise HTTPException(status_code=404)", "status"),
        ('{"code": 404, "message": "No such order"}', "status"),
    ],
)
def test_configuration_and_http_name_the_number_as_the_word_does(text: str, label: str) -> None:
    (slot,) = number_slots(text)
    assert slot.describe() == f"{label} {slot.number}"


def test_an_address_and_its_port() -> None:
    assert number_slots("Bind it to 0.0.0.0:8080.")[-1].describe() == "port 8080"


@pytest.mark.parametrize(
    "text",
    [
        "since HTTP 2 came out",
        "step_count = 5",
        "It took 3: 12 more came later.",
        "We meet at 10:30.",
        "Notes. Total: 12 items.",
    ],
)
def test_what_is_no_label_stays_none(text: str) -> None:
    assert all(slot.describe().split()[0] not in {"port", "status", "step"} for slot in
               number_slots(text))  # fmt: skip


PORTS = "Set API_PORT=8080 for the API and ADMIN_PORT=8443 for the admin UI."
HOSTS = "The app runs on localhost:8000 and the docs server on localhost:8001."
KEYS = "The API uses port: 8080 and the metrics server port: 9102."


@pytest.mark.parametrize(
    ("claim", "source", "said"),
    [
        ("The admin UI listens on port 8080.", PORTS, "port 8080 is said of something else"),
        ("The docs server runs on port 8000.", HOSTS, "port 8000 is said of something else"),
        ("The API listens on port 9102.", KEYS, "port 9102 is said of something else"),
    ],
)
def test_a_port_said_of_another_clause_s_subject_is_flagged(
    claim: str, source: str, said: str
) -> None:
    (fact,) = unstated_facts(claim, source)
    assert fact.reason.startswith(said) and fact.source == source


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("The admin UI listens on port 8443.", PORTS),
        ("The API listens on port 8080.", PORTS),
        ("The docs server runs on port 8001.", HOSTS),
        ("The app runs on port 8000.", HOSTS),
        ("The metrics server uses port 9102.", KEYS),
        # A year frames its sentence (two false flags on FRANK).
        (
            "He was arrested in 2012.",
            "The thefts began in 2010, and he was arrested in July 2012.",
        ),
    ],
)
def test_the_clause_s_own_number_is_stated(claim: str, source: str) -> None:
    assert unstated_facts(claim, source) == []


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("A bad token gets HTTP 403.", "A bad token gets status 403."),
        ("HTTP status 403 is sent.", "status 403 is sent."),
        ("It returns a 404 Not Found.", "It returns a 404."),
        ("It returns 422 Unprocessable Entity.", "It returns 422."),
        # Another code's phrase stays, to be checked as written.
        ("It returns 403 Not Found.", "It returns 403 Not Found."),
        ("The HTTP client retries.", "The HTTP client retries."),
    ],
)
def test_http_before_a_code_is_its_status_and_its_own_phrase_adds_nothing(
    text: str, read: str
) -> None:
    assert as_status(text) == read


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("A bad token gets HTTP 403.", "A request with a bad token gets status 403."),
        (
            "The server returns HTTP 404 for an unknown page.",
            "For an unknown page the server returns a 404 status code.",
        ),
        ("It returns a 404 Not Found.", "The server returns HTTP 404 for an unknown page."),
    ],
)
def test_a_status_written_the_http_way_is_stated(claim: str, source: str) -> None:
    assert unstated_facts(claim, source) == []


def test_http_401_clashes_with_status_403(judge: OfflineJudge) -> None:
    claim, source = "The server answers HTTP 401 to a bad token.", "The server answers " \
        "status 403 to a bad token."  # fmt: skip
    (judged,) = judge.judge_claims([claim], source)
    assert judged.verdict == "contradicted" and "status 401 ≠ status 403" in judged.reason
    (fact,) = unstated_facts(claim, source)
    assert fact.token == "401"


ORDERS = "To place an order, call place_order(cart). To cancel it, call cancel_order(order_id)."


def test_a_name_one_part_off_in_a_sentence_saying_the_same_is_a_misname() -> None:
    (fact,) = unstated_facts("Call create_order() to place an order.", ORDERS)
    assert fact.kind == "identifier"
    assert fact.reason == "create_order is in no cited source (the sources write place_order)"
    check = check_answer("Call create_order() to place an order [1].", [
        {"n": 1, "chunk_id": "c", "source": "orders.md", "text": ORDERS}])  # fmt: skip
    assert check["score"] is not None and check["score"] < 0.5


BODY = (
    "    func = prepare_map(context, args, kwargs)\n    for item in value:\n"
    "        yield func(item)"
)


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        # A chunk of a function's body without its def line: the answer names the function.
        ("do_map applies the filter to each item.", BODY),
        ("do_map calls prepare_map with the context, args and kwargs.", BODY),
        ("The place_order function takes the cart.", ORDERS),
    ],
)
def test_a_name_one_part_off_elsewhere_is_let_pass(claim: str, source: str) -> None:
    assert [f for f in unstated_facts(claim, source) if f.kind == "identifier"] == []


@pytest.mark.parametrize(
    ("answer", "fails"),
    [
        ("The admin UI listens on port 8080 [1].", True),
        ("By default, the admin UI listens on port 8443 [1].", False),
    ],
)
def test_the_gate_reads_a_port_moved_to_another_subject(
    tmp_path: Path, answer: str, fails: bool
) -> None:
    row = {"id": "admin", "question": "Which port does the admin UI listen on?",
           "answer": answer, "contexts": [PORTS]}  # fmt: skip
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(eval_group, [*args, "--min-each", "faithfulness=0.5"])
    assert result.exit_code == (REGRESSION_EXIT_CODE if fails else 0), result.output
    assert ("port 8080 is said of something else" in result.output) == fails


# A review of the first version (217 cases of its own, against main too) found these.
@pytest.mark.parametrize(
    ("claim", "source"),
    [
        # A later clause that leaves out the subject it shares keeps its number when it
        # writes a word of the claim the earlier one lacks.
        (
            "The API listens on port 80 in production.",
            "The API listens on port 8080 in development and port 80 in production.",
        ),
        (
            "The background worker process listens on port 9100.",
            "The background worker process connects to Redis on port 6379 and then listens "
            "on port 9100.",
        ),
        (
            "Builds take 9 minutes on macOS.",
            "Builds take 4 minutes on Linux and 9 minutes on macOS.",
        ),
        ("Anna ran 10 km on Wednesday.", "Anna ran 5 km on Monday and 10 km on Wednesday."),
        (
            "The free tier stores 50 GB for teams.",
            "The free tier stores 5 GB for individual users and 50 GB for teams.",
        ),
    ],
)
def test_a_later_clause_sharing_the_subject_states_its_number(claim: str, source: str) -> None:
    assert unstated_facts(claim, source) == []


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        (
            "Builds take 9 minutes on Linux.",
            "Builds take 4 minutes on Linux and 9 minutes on macOS.",
        ),
        (
            "The web server listens on port 9100.",
            "The web server listens on port 8080 and the worker on port 9100.",
        ),
    ],
)
def test_a_number_of_the_other_clause_is_still_flagged(claim: str, source: str) -> None:
    (fact,) = unstated_facts(claim, source)
    assert "is said of something else" in fact.reason


@pytest.mark.parametrize(
    ("claim", "body"),
    [
        (
            "load_config reads the YAML config file at the path and returns a Config.",
            '    """Read the YAML config file at path and return a Config."""\n'
            "    path = Path(path).expanduser()\n    text = read_config(path)\n"
            "    data = yaml.safe_load(text)\n    return Config(**data)",
        ),
        (
            "send_email builds the message and sends it through the SMTP relay.",
            '    """Build the message and send it through the SMTP relay."""\n'
            "    msg = build_message(to, subject, body)\n    send_message(msg)\n",
        ),
        (
            "get_user looks through all users and returns the one whose id matches user_id.",
            "    users = get_users()\n    for user in users:\n        if user.id == user_id:\n"
            "            return user\n    return None",
        ),
        (
            "fetch_page downloads a page and returns its text.",
            '    """Download a page and return its text."""\n'
            "    resp = fetch_url(url, timeout=10)\n    resp.raise_for_status()\n"
            "    return resp.text",
        ),
    ],
)
def test_a_function_named_beside_its_body_calling_a_name_one_part_off_passes(
    claim: str, body: str
) -> None:
    assert [f for f in unstated_facts(claim, body) if f.kind == "identifier"] == []


def test_a_name_one_part_off_the_def_line_is_a_misname() -> None:
    body = '@app.get("/items/{item_id}")\ndef read_item(item_id: int):\n    item = db.get(item_id)'
    (fact,) = [f for f in unstated_facts("get_item looks the item up by its id.", body)
               if f.kind == "identifier"]  # fmt: skip
    assert "the sources write read_item" in fact.reason


def test_a_status_written_with_its_reason_phrase_is_a_status() -> None:
    source = "Expired tokens get 401 Unauthorized; unknown routes get 404 Not Found."
    (fact,) = unstated_facts("Expired tokens get HTTP 404 Not Found.", source)
    assert fact.reason.startswith("status 404 is said of something else")
    assert unstated_facts("Expired tokens get HTTP 401.", source) == []
