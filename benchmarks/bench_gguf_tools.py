"""Tool calling of a GGUF chat model (``ChatGGUF.bind_tools``): how often its first step on
a question is a valid ``rag_search`` call, a call cut off at ``max_tokens`` (never run), or
a reply without a call.

    python benchmarks/bench_gguf_tools.py                      # SmolLM2-135M, 10 questions
    python benchmarks/bench_gguf_tools.py --model path/to/model.gguf --questions 40
    python benchmarks/bench_gguf_tools.py --quick   # 1 question, rag_search forced as shipped

The questions are the bundled examples/docs set (``evals/data/examples_docs.jsonl``);
the prompt is the tool agent's (its system prompt, ``rag_search`` bound). Per tool choice
(``auto``; ``rag_search`` forced, as the tool agent's first step does) it runs ``ChatGGUF``
as shipped (a cut call is made once more with repeat_penalty 1.1) and greedy only
(``repeat_penalty=1.0`` given, so nothing is made again). Figures are counts over the
questions and the median seconds per reply (machine load shows in those).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from _quick import parse
from bench_gguf import smollm2
from langchain_core.messages import HumanMessage, SystemMessage

from kbgraph.evals._datasets import bundled_dataset_path, load_dataset
from kbgraph.graphs._chat_models import ChatGGUF
from kbgraph.graphs._tool import rag_search
from kbgraph.prompts import render_prompt

DECODINGS: list[tuple[str, dict[str, Any]]] = [
    ("as shipped", {}),
    ("greedy only", {"repeat_penalty": 1.0}),
]
CASES = [(choice, *decoding) for choice in (None, "rag_search") for decoding in DECODINGS]


def first_steps(
    model: ChatGGUF, questions: list[str], choice: str | None, options: dict[str, Any]
) -> dict[str, float]:
    system = render_prompt("agent_tool_system", knowledge_bases="docs (the Harbor docs)")
    bound = model.bind_tools([rag_search], tool_choice=choice, **options)
    counts = {"valid": 0, "cut": 0, "no call": 0, "made again": 0}
    seconds = []
    for question in questions:
        started = time.monotonic()
        reply = bound.invoke([SystemMessage(system.strip()), HumanMessage(question)])
        seconds.append(time.monotonic() - started)
        kind = "valid" if reply.tool_calls else "cut" if reply.invalid_tool_calls else "no call"
        counts[kind] += 1
        counts["made again"] += "cut_reply_retried" in reply.response_metadata
    return {**counts, "seconds": statistics.median(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a .gguf file")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parse(parser, questions=1, max_tokens=16)
    path = args.model or smollm2()
    rows = load_dataset(bundled_dataset_path())[: args.questions]
    questions = [row.question for row in rows]
    model = ChatGGUF(model_path=str(path), n_ctx=2048, max_tokens=args.max_tokens)
    print(f"{path.name}, {platform.machine()}, Python {platform.python_version()}, "
          f"{len(questions)} questions, max_tokens={args.max_tokens}")  # fmt: skip
    print("| tool_choice | decoding | valid call | cut call | no call | made again | s/reply |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for choice, label, options in CASES[-2:-1] if args.quick else CASES:
        row = first_steps(model, questions, choice, options)
        print(
            f"| {choice or 'auto'} | {label} | {row['valid']:.0f} | {row['cut']:.0f} "
            f"| {row['no call']:.0f} | {row['made again']:.0f} | {row['seconds']:.1f} |"
        )


if __name__ == "__main__":
    main()
