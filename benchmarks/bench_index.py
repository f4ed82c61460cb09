"""Indexing against the model's floor (issue 44): what ``kbgraph index`` costs per chunk,
beside the packaged ONNX model alone encoding the very same chunk texts.

    python benchmarks/bench_index.py                  # httpx docs + the Jinja sdist, medians of 3
    python benchmarks/bench_index.py --runs 1         # one cold run each
    python benchmarks/bench_index.py --quick          # examples/docs, one run, no results file
    python benchmarks/bench_index.py --embedding local#int8   # the index at int8

Corpora: the httpx docs (``../shared/data/corpora/httpx-docs`` beside the repository) and an
sdist's docs + source (``--sdist``, default ``/tmp/jinja/jinja2-3.1.6``: ``pip download
--no-deps --no-binary :all: jinja2==3.1.6 -d /tmp/jinja`` and unpack it there); a corpus
that is not there is said and skipped. Any folder can be given with ``--corpus``.

Every run is cold: a fresh ``kbgraph index FOLDER --index-dir TMP`` process (the CLI's own
command, run in-process by a small driver that only records CPU time at each progress
stage) with a new index folder, hence an empty embedding cache. Figures are medians:

- ``index CPU-s``: user + system CPU of the whole process (imports and model load
  included), and its peak RSS, both from ``wait4``;
- ``floor CPU-s``: the packaged model alone, on the same runtime (onnxruntime, the export
  ``kbgraph index`` runs), the same threads, tokenized by the same ``tokenizer.json``,
  encoding exactly the chunk texts the index holds: tokenize, run, mean-pool, normalise.
  Only that loop is timed (no imports, no session creation), so the floor is strict. Two
  floors: batches of 32 texts sorted by length (the plain way, what kbgraph did before),
  and batches of at most 1,024 padded tokens by token count (what kbgraph does now);
- ``floor÷index``: ≥ 1 means the whole command costs less CPU than that floor;
- the shares of the index's CPU: startup (imports, opening the index), scan + parse +
  chunk, embed (model load, cache, encode), write.

CPU-seconds, not wall time: the machine is shared. The load average is printed beside.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _quick import parse

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
HTTPX = REPO.parent / "shared" / "data" / "corpora" / "httpx-docs"
SDIST = Path("/tmp/jinja/jinja2-3.1.6")
EXAMPLES = REPO / "examples" / "docs"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LANGSMITH_TRACING": "false"}

# The CLI's own `index` command, its progress bar replaced by a recorder of process CPU
# time at the first event of each stage: the shares of parse/chunk, embed and write.
_INDEX = r"""
import json, sys, time
from kbgraph import cli
first = {}
class Recorder:
    def __init__(self, enabled=True): pass
    def __enter__(self): return self
    def __exit__(self, *exc): return False
    def __call__(self, event):
        first.setdefault(event.stage, time.process_time())
# The CLI imports it when it indexes (kbgraph/cli.py): patched where it is imported from.
import kbgraph._progress
kbgraph._progress.TqdmProgress = Recorder
try:
    cli.main(["index", sys.argv[1], "--index-dir", sys.argv[2], "--quiet", "--json",
              "--embedding", sys.argv[3]],
             standalone_mode=False)
finally:
    first["end"] = time.process_time()
    print("PHASES " + json.dumps(first), flush=True)
"""

# The floor: the export alone, tokenize + run + mean-pool + normalise, timed loop only.
_FLOOR = r"""
import json, sys, time
import numpy as np, onnxruntime
from tokenizers import Tokenizer
export, texts_file, threads, batching = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
limit = int(sys.argv[5])
texts = json.loads(open(texts_file, encoding="utf-8").read())
options = onnxruntime.SessionOptions()
options.log_severity_level = 3
options.intra_op_num_threads = threads
options.add_session_config_entry("session.intra_op.allow_spinning", "0")
options.add_session_config_entry("session.inter_op.allow_spinning", "0")
session = onnxruntime.InferenceSession(export + "/model.onnx", options,
                                       providers=["CPUExecutionProvider"])
names = {i.name for i in session.get_inputs()}
tok = Tokenizer.from_file(export + "/tokenizer.json")
counter = Tokenizer.from_file(export + "/tokenizer.json")
counter.no_truncation(); counter.no_padding()
over = sum(len(e.ids) > limit for e in counter.encode_batch(texts))
tok.enable_truncation(max_length=limit)
pad = tok.token_to_id("[PAD]") or 0
tok.enable_padding(pad_id=pad)

def run(batch):
    enc = tok.encode_batch(batch)
    feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
             "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
             "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
    hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
    w = feeds["attention_mask"][..., None].astype(np.float32)
    pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

start = time.process_time()
if batching == "32":
    ordered = sorted(texts, key=len)
    batches = [ordered[i:i + 32] for i in range(0, len(ordered), 32)]
else:  # at most 1,024 padded tokens a batch (rows x longest), by token count
    counts = [min(len(e.ids), limit) for e in counter.encode_batch(texts)]
    order = sorted(range(len(texts)), key=lambda i: -counts[i])
    batches, rows = [], []
    for i in order:
        if rows and (len(rows) + 1) * counts[rows[0]] > 1024:
            batches.append([texts[j] for j in rows]); rows = []
        rows.append(i)
    if rows:
        batches.append([texts[j] for j in rows])
for batch in batches:
    run(batch)
print(json.dumps({"cpu_s": time.process_time() - start, "texts": len(texts), "over": over}))
"""

_EXPORT = r"""
import json, sys
from kbgraph.retrieval._embeddings import LocalEmbeddings, packaged_model_dir, resolve_embeddings
from kbgraph.retrieval._embeddings._onnx import export_dir, pipeline_of
model = LocalEmbeddings()
if model.backend != "onnx":
    model.client  # loading it on torch writes the export
resolve_embeddings(sys.argv[1]).embed_query("warm")  # local#int8: its export made now
pipeline = pipeline_of(packaged_model_dir())
print(json.dumps({"export": str(export_dir(pipeline)), "limit": pipeline.max_seq_length}))
"""


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, **OFFLINE, "PYTHONPATH": path or str(REPO)}


def _child(code: str, *args: str) -> tuple[str, float, float]:
    """Run ``python -c code args``: its stdout, CPU seconds (user + system) and peak RSS
    (MiB), both from ``wait4``."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=out,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=tempfile.gettempdir(),  # not the repository: PYTHONPATH decides which kbgraph
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode}):\n{text[-2000:]}\n{err[-3000:]}")
    return text, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _chunk_texts(index_dir: Path) -> list[str]:
    """The texts the index embedded: each chunk under its heading path (``index_text``)."""
    generation = index_dir / (index_dir / "CURRENT").read_text().strip()
    texts = []
    for line in (generation / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        chunk = json.loads(line)
        section = chunk.get("section")
        texts.append(f"{section}\n\n{chunk['text']}" if section else chunk["text"])
    return texts


def index_run(folder: Path, work: Path, keep_texts: bool, embedding: str) -> dict[str, Any]:
    """One cold ``kbgraph index`` run into a fresh index folder."""
    index_dir = Path(tempfile.mkdtemp(dir=work))
    out, cpu, rss = _child(_INDEX, str(folder), str(index_dir), embedding)
    lines = out.strip().splitlines()
    phases = json.loads(lines[-1].removeprefix("PHASES "))
    report = json.loads("\n".join(lines[:-1]))
    run = {"cpu_s": cpu, "rss_mib": rss, "phases": phases, "report": report}
    if keep_texts:
        run["texts"] = _chunk_texts(index_dir)
    shutil.rmtree(index_dir, ignore_errors=True)
    return run


def floor_run(export: dict[str, Any], texts_file: Path, threads: int, batching: str) -> float:
    out, _, _ = _child(
        _FLOOR, export["export"], str(texts_file), str(threads), batching, str(export["limit"])
    )
    return float(json.loads(out.strip().splitlines()[-1])["cpu_s"])


def shares(phases: dict[str, float]) -> dict[str, float]:
    """Shares of the recorded CPU: startup (to the scan), scan + parse + chunk (to the first
    embed event), embed (to the write), write (to the end)."""
    marks = [0.0] + [phases.get(k, phases["end"]) for k in ("scan", "embed", "write", "end")]
    spans = [b - a for a, b in itertools.pairwise(marks)]
    total = sum(spans) or 1.0
    names = ("startup", "scan+parse+chunk", "embed", "write")
    return {n: s / total for n, s in zip(names, spans, strict=True)}


def measure(
    name: str, folder: Path, args: argparse.Namespace, work: Path, export: dict[str, Any]
) -> dict[str, Any]:
    runs, threads = args.runs, args.threads
    print(f"{name}: {runs} cold run(s) of kbgraph index {folder} ...", file=sys.stderr)
    indexed = [index_run(folder, work, i == 0, args.embedding) for i in range(runs)]
    texts = indexed[0].pop("texts")
    texts_file = work / f"{folder.name}-texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    floors = {
        b: statistics.median(floor_run(export, texts_file, threads, b) for _ in range(runs))
        for b in ("32", "tokens")
    }
    cpu = statistics.median(r["cpu_s"] for r in indexed)
    split = [shares(r["phases"]) for r in indexed]
    return {
        "corpus": name,
        "files": indexed[0]["report"].get("fileCount"),
        "chunks": len(texts),
        "truncated": indexed[0]["report"].get("truncated", "not reported"),
        "index_cpu_s": cpu,
        "rss_mib": statistics.median(r["rss_mib"] for r in indexed),
        "floor_32_cpu_s": floors["32"],
        "floor_tokens_cpu_s": floors["tokens"],
        "shares": {k: statistics.median(s[k] for s in split) for k in split[0]},
        "runs": runs,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| corpus | chunks | cut | index CPU-s | peak RSS MiB | chunks/CPU-s | "
        "floor CPU-s, 32/batch | floor÷index | floor CPU-s, ≤1,024 tokens | floor÷index |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r['corpus']} | {r['chunks']} | {r['truncated']} | {r['index_cpu_s']:.2f} | "
        f"{r['rss_mib']:.0f} | {r['chunks'] / r['index_cpu_s']:.1f} | "
        f"{r['floor_32_cpu_s']:.2f} | {r['floor_32_cpu_s'] / r['index_cpu_s']:.2f} | "
        f"{r['floor_tokens_cpu_s']:.2f} | {r['floor_tokens_cpu_s'] / r['index_cpu_s']:.2f} |\n"
        for r in rows
    )
    split = "| corpus | startup | scan+parse+chunk | embed | write | CPU-s per chunk |\n"
    split += "|---|---|---|---|---|---|\n"
    split += "".join(
        f"| {r['corpus']} | "
        + " | ".join(f"{v:.0%}" for v in r["shares"].values())
        + f" | {r['index_cpu_s'] / r['chunks'] * 1000:.1f} ms |\n"
        for r in rows
    )
    return head + body + "\nShares of the index's CPU (median of the runs):\n\n" + split


def corpora(args: argparse.Namespace, work: Path) -> list[tuple[str, Path]]:
    if args.quick:  # two files of examples/docs: seconds of encoding
        folder = work / "quick"
        folder.mkdir()
        for name in ("README.md", "CHANGELOG.md"):
            shutil.copyfile(EXAMPLES / name, folder / name)
        return [("examples-docs (2 files)", folder)]
    chosen = [(Path(c).name, Path(c)) for c in args.corpus] or [
        ("httpx-docs", HTTPX),
        (SDIST.name, Path(args.sdist)),
    ]
    present = []
    for name, folder in chosen:
        if folder.is_dir():
            present.append((name, folder))
        else:
            print(f"skipped {name}: {folder} is not there (see --help)", file=sys.stderr)
    return present


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="cold runs per corpus (median)")
    parser.add_argument("--corpus", action="append", default=[], help="a folder (repeatable)")
    parser.add_argument("--sdist", default=str(SDIST), help="an unpacked sdist's folder")
    parser.add_argument(
        "--threads", type=int, default=0, help="the floor's threads (0: onnxruntime's default)"
    )
    parser.add_argument(
        "--embedding",
        default="local",
        help="the index's model: local, or local#int8 (the floor stays the fp32 export)",
    )
    args = parse(parser, runs=1)
    load = os.getloadavg()
    rows = []
    # The export first: a cold run without one would load torch (and write it).
    export = json.loads(_child(_EXPORT, args.embedding)[0].strip().splitlines()[-1])
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        for name, folder in corpora(args, Path(tmp)):
            rows.append(measure(name, folder, args, Path(tmp), export))
    after = os.getloadavg()
    print(_table(rows))
    print(
        f"Load average (1 min) {load[0]:.1f} before, {after[0]:.1f} after; "
        f"{os.cpu_count()} CPUs; floor threads: {args.threads or 'onnxruntime default'}; "
        f"medians of {args.runs} cold run(s); 'cut': chunks longer than the model's input; "
        f"index model: {args.embedding}"
    )
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        name = "bench-index-int8.json" if args.embedding.endswith("int8") else "bench-index.json"
        (RESULTS / name).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
