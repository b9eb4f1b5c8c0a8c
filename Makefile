# Everything runs from one virtual environment in .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test check typecheck docs bench clean

# The CPU build of torch goes in first, pinned, so the [memory] extra's lower bound
# (torch>=2.13) is already met and pip never pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[memory,postgres,test,bench,serve,langchain,llama-index]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/cleo-rules demo

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/cleo-rules check

typecheck: $(STAMP)
	$(BIN)/pyright

docs: $(STAMP)
	$(BIN)/python -c 'from cleo_rules.codes import markdown; print(markdown(), end="")' > docs/errors.md

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info
