# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two stamps: the demo needs only the package; tests and lint add the dev extras.
STAMP     := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# Kueue's plan (greedy) and placewise's (cpsat) on the same cluster, side by side.
demo: $(STAMP)
	$(BIN)/placewise solve instances/demo/*.yaml --compare greedy

test: $(DEV_STAMP)
	$(BIN)/python -m pytest tests

# Style, types, and the import contracts of pyproject.toml (the layering).
lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p placewise
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build *.egg-info
