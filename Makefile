# Everything runs from one virtual environment in .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser demo test check typecheck docs bench figures clean

# The CPU build of torch goes in first, pinned, so the [reference] extra's lower bound
# (torch>=2.13) is already met and pip never pulls a multi-GB CUDA build. The [memory]
# extra itself embeds with ONNX Runtime and needs no torch; the development environment
# has the reference backend too (tests and benchmarks compare the two). The embedding model is
# the package of models/cleo-rules-minilm (the [memory] extra's exact pin on it): installed
# editable in the same pip command, so pip takes the checkout's own for that pin.
MODEL := models/cleo-rules-minilm

$(STAMP): pyproject.toml $(MODEL)/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ./$(MODEL) -e ".[memory,reference,postgres,test,bench,serve,langchain,llama-index]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/cleo-rules demo

# The playground's browser tests drive Debian's Chromium through its driver: installed
# with apt-get when missing (as root), else the command to run is printed.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium and chromium-driver for the browser tests"; \
	    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "the browser tests need Chromium and its driver: sudo apt-get install chromium chromium-driver" >&2; \
	    exit 1; \
	  fi; \
	fi

# The suite runs on every core (pytest-xdist, one test file per worker: see tests/conftest.py);
# TEST_WORKERS=0 runs it in this one process. The package's bytecode is compiled first, so the
# hundreds of commands the tests start read it even where PYTHONDONTWRITEBYTECODE is set.
TEST_WORKERS ?= auto

test: $(STAMP) browser
	$(BIN)/python -m compileall -q cleo_rules
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

check: $(STAMP)
	$(BIN)/cleo-rules check

typecheck: $(STAMP)
	$(BIN)/pyright

docs: $(STAMP)
	$(BIN)/python -c 'from cleo_rules.codes import markdown; print(markdown(), end="")' > docs/errors.md

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python bench/run_all.py

# The README's headline figures table, rewritten from measurements (takes minutes: eval_retrieval.py embeds).
figures: $(STAMP)
	HF_HUB_OFFLINE=1 CLEO_EMBED_THREADS=1 $(BIN)/python bench/figures.py

clean:
	rm -rf $(VENV) build dist *.egg-info
