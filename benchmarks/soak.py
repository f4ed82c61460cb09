"""Soak test of the index under crashes and concurrency (not CI: it runs for minutes).

    python benchmarks/soak.py                          # 200 kills, then 10 minutes
    python benchmarks/soak.py --kills 8 --minutes 0.5  # a quick proof that it runs
    python benchmarks/soak.py --quick                  # 2 kills, 6 s of concurrency: a smoke run

Part 1 SIGKILLs an indexing process at random moments of its run, aimed in turn at each
phase: startup (importing, opening the index), load (scan, read, chunk), embed (a slow fake
model, so batches take time) and write (the new generation and the pointer swap). The
folder is rewritten to a new corpus version before every run, and every fourth run is a
``--rebuild``. After every kill the index must open, validate (``stats --validate``'s full
check) and answer a search; every tenth kill a run is left to finish, which must not
rebuild. Part 2 runs two writers (each rewriting the folder to its own corpus versions and
indexing it, one with ``--rebuild``) and four readers for ``--minutes``; every generation a
reader opens must be whole: each chunk is the bytes of the file version whose sha256
meta.json records, each vector the embedding of its chunk, every count agrees
(``tests/integration/_reader_child.check``).

It prints the kills landed per phase, the corrupt indexes (a check failed after a kill),
the torn reads (a reader saw a mix of generations) and any other errors; the exit status is
1 when any of those is not 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _quick import parse  # noqa: E402

from tests.integration._corpus import write_corpus  # noqa: E402

CHILD = ROOT / "tests" / "integration" / "_index_child.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
PHASES = ("startup", "load", "embed", "write")
# The line a phase starts with, and how long after it the kill may come (seconds): the
# spans measured on a 2-core machine with 40 files and the slow fake model.
_AIM: dict[str, tuple[str | None, float]] = {
    "startup": (None, 1.2),
    "load": ("load", 0.03),
    "embed": ("embed", 0.45),
    "write": ("write", 0.01),
}
_STAGE_PHASE = {"scan": "load", "load": "load", "embed": "embed", "write": "write"}


def _spawn(folder: Path, rebuild: bool) -> subprocess.Popen[str]:
    mode = "rebuild" if rebuild else "update"
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(folder), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def _kill_in(proc: subprocess.Popen[str], phase: str, rng: random.Random) -> str:
    """SIGKILL during ``phase`` (as aimed); return the phase the child was really in:
    the last progress line it printed decides, ``late`` when it had finished."""
    assert proc.stdout is not None
    marker, span = _AIM[phase]
    last = None
    if marker is not None:
        for line in proc.stdout:
            last = line.split()[0] if line.strip() else last
            if last in (marker, "finished"):
                break
    time.sleep(rng.uniform(0.0, span))
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    for line in rest.splitlines():
        if line.strip():
            words = line.split()
            last = words[0]
            if words[:3] == ["write", "1", "1"]:
                last = "finished"  # published: the kill came after the run's work
    if last is None:
        return "startup"
    return _STAGE_PHASE.get(last, "late")


def _check(folder: Path) -> str | None:
    """Open, validate and search the index; the error, or None when sound."""
    from kbgraph.retrieval import KnowledgeBase
    from kbgraph.testing import FakeEmbeddings

    try:
        with KnowledgeBase(folder, embedding=FakeEmbeddings()) as kb:
            kb.validate()
            if not kb.search("retry backoff latency", top_k=5):
                return "search found nothing"
    except Exception as exc:  # every failure is a finding, reported and counted
        return f"{type(exc).__name__}: {exc}"
    return None


def _finish(folder: Path) -> str | None:
    """A run left to finish after a kill must complete without rebuilding."""
    proc = subprocess.run(
        [sys.executable, "-m", "kbgraph", "index", str(folder), "--embedding", "fake", "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    if proc.returncode != 0:
        return proc.stderr.strip()[-300:]
    report = json.loads(proc.stdout)
    if report["rebuilt"] or report["staleFiles"]:
        return f"rebuilt={report['rebuilt']} staleFiles={report['staleFiles']}"
    return None


def kills(workdir: Path, target: int, rng: random.Random) -> dict[str, object]:
    folder = workdir / "kills"
    folder.mkdir(parents=True)
    write_corpus(folder, 0)
    first = _spawn(folder, rebuild=False)
    if first.wait(timeout=600) != 0:
        raise SystemExit(
            f"the first index run failed: {first.stderr.read() if first.stderr else ''}"
        )
    landed: Counter[str] = Counter()
    corrupt: list[str] = []
    finish_errors: list[str] = []
    attempts = 0
    started = time.monotonic()
    while sum(landed[p] for p in PHASES) < target and attempts < 4 * target:
        attempts += 1
        write_corpus(folder, attempts, files=rng.randint(30, 45))
        aim = PHASES[attempts % len(PHASES)]
        phase = _kill_in(_spawn(folder, rebuild=attempts % 4 == 0), aim, rng)
        landed[phase] += 1
        problem = _check(folder)
        if problem is not None:
            corrupt.append(f"kill {attempts} ({phase}): {problem}")
        if attempts % 10 == 0:
            problem = _finish(folder) or _check(folder)
            if problem is not None:
                finish_errors.append(f"after kill {attempts}: {problem}")
        if attempts % 20 == 0:
            done = sum(landed[p] for p in PHASES)
            print(f"  {done} kills landed of {attempts} attempts", file=sys.stderr, flush=True)
    return {
        "attempts": attempts,
        "landed": {p: landed[p] for p in (*PHASES, "late")},
        "corrupt": corrupt,
        "finish_errors": finish_errors,
        "seconds": round(time.monotonic() - started, 1),
    }


# -- concurrency ----------------------------------------------------------------------


def _writer(folder: Path, first: int, stop: Path, max_version: int, rebuild: bool) -> None:
    from kbgraph.retrieval import KnowledgeBase

    sys.path.insert(0, str(CHILD.parent))
    from _index_child import SlowFake

    kb = KnowledgeBase(folder, embedding=SlowFake(), lock_timeout=600)
    runs, version = 0, first
    while not stop.exists():
        write_corpus(folder, version)
        kb.index(rebuild=rebuild)
        runs += 1
        version = version + 2 if version + 2 <= max_version else first
    print(json.dumps({"runs": runs}), flush=True)


def _reader(folder: Path, stop: Path, max_version: int) -> None:
    from kbgraph.retrieval._folder import FolderSnapshot, IndexLayout
    from tests.integration._reader_child import check

    layout = IndexLayout(folder / ".kbgraph")
    seen: set[str] = set()
    checked, torn, errors = 0, [], []
    while not stop.exists():
        try:
            # A snapshot, as the reader child opens: search() asks it has_vectors.
            reader = FolderSnapshot(layout, lock_timeout=600)
        except Exception as exc:
            errors.append(f"open: {type(exc).__name__}: {exc}")
            continue
        try:
            check(reader, max_version)
            seen.add(reader.name)
            checked += 1
        except AssertionError as exc:
            torn.append(f"{reader.name}: {exc}"[:300])
        except Exception as exc:
            errors.append(f"{reader.name}: {type(exc).__name__}: {exc}"[:300])
        finally:
            reader.close()
        time.sleep(0.01)
    out = {"generations": len(seen), "checked": checked, "torn": torn, "errors": errors}
    print(json.dumps(out), flush=True)


def concurrency(workdir: Path, minutes: float, writers: int, readers: int) -> dict[str, object]:
    folder = workdir / "concurrent"
    folder.mkdir(parents=True)
    write_corpus(folder, 0)
    if _spawn(folder, rebuild=False).wait(timeout=600) != 0:
        raise SystemExit("the first index run of the concurrency part failed")
    stop = workdir / "stop"
    max_version = 2 * 10
    me = [sys.executable, str(Path(__file__).resolve())]

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*me, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        )

    procs_w = [
        start("_writer", str(folder), str(1 + i), str(stop), str(max_version), str(i % 2))
        for i in range(writers)
    ]
    procs_r = [start("_reader", str(folder), str(stop), str(max_version)) for _ in range(readers)]
    time.sleep(minutes * 60)
    stop.touch()
    results: dict[str, list[object]] = {"writers": [], "readers": []}
    errors: list[str] = []
    for kind, procs in (("writers", procs_w), ("readers", procs_r)):
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            if proc.returncode != 0:
                errors.append(f"{kind[:-1]} exited {proc.returncode}: {err.strip()[-300:]}")
                continue
            results[kind].append(json.loads(out.strip().splitlines()[-1]))
    torn = [t for r in results["readers"] for t in r["torn"]]  # type: ignore[index]
    errors += [e for r in results["readers"] for e in r["errors"]]  # type: ignore[index]
    problem = _check(folder)
    if problem is not None:
        errors.append(f"final check: {problem}")
    if any(w["runs"] < 2 for w in results["writers"]) or any(  # type: ignore[index]
        r["generations"] < 2
        for r in results["readers"]  # type: ignore[index]
    ):
        errors.append(
            "a writer published fewer than 2 generations or a reader saw fewer: run longer"
        )
    return {
        "minutes": minutes,
        "writer_runs": [w["runs"] for w in results["writers"]],  # type: ignore[index]
        "reader_generations": [r["generations"] for r in results["readers"]],  # type: ignore[index]
        "reader_checks": [r["checked"] for r in results["readers"]],  # type: ignore[index]
        "torn": torn,
        "errors": errors,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_writer":
        folder, first, stop, max_version, rebuild = sys.argv[2:7]
        _writer(Path(folder), int(first), Path(stop), int(max_version), rebuild == "1")
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_reader":
        _reader(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="kills that must land mid-run")
    parser.add_argument("--minutes", type=float, default=10.0, help="concurrency part")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parse(parser, kills=2, minutes=0.1, writers=1, readers=1)
    import tempfile

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kbgraph-soak-"))
    started = time.monotonic()
    try:
        killed = kills(workdir, args.kills, random.Random(args.seed))
        print(f"kills done in {killed['seconds']} s; concurrency next", file=sys.stderr)
        together = concurrency(workdir, args.minutes, args.writers, args.readers)
    except Exception:
        traceback.print_exc()
        return 2
    figures = {
        "kills": killed,
        "concurrency": together,
        "seconds": round(time.monotonic() - started),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        _report(figures)
    bad = killed["corrupt"] or killed["finish_errors"] or together["torn"] or together["errors"]
    return 1 if bad else 0


def _report(figures: dict[str, dict[str, object]]) -> None:
    k, c = figures["kills"], figures["concurrency"]
    landed = k["landed"]
    assert isinstance(landed, dict)
    mid = sum(landed[p] for p in PHASES)
    print(
        f"kills landed mid-run: {mid} of {k['attempts']} attempts "
        f"(startup {landed['startup']}, load {landed['load']}, embed {landed['embed']}, "
        f"write {landed['write']}; {landed['late']} came after the run)"
    )
    print(f"corrupt indexes after a kill (open + validate + search): {len(k['corrupt'])}")  # type: ignore[arg-type]
    print(f"runs left to finish after a kill that failed or rebuilt: {len(k['finish_errors'])}")  # type: ignore[arg-type]
    print(
        f"concurrency: {c['minutes']} min, writer runs {c['writer_runs']}, reader "
        f"generations {c['reader_generations']}, reader checks {c['reader_checks']}"
    )
    print(f"torn reads: {len(c['torn'])}")  # type: ignore[arg-type]
    print(f"errors: {len(c['errors'])}")  # type: ignore[arg-type]
    for line in [*k["corrupt"], *k["finish_errors"], *c["torn"], *c["errors"]][:20]:  # type: ignore[misc]
        print(f"  {line}")


if __name__ == "__main__":
    raise SystemExit(main())
