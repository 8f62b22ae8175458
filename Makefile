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

# Line coverage is measured on the real folders ([tool.coverage.run]) and
# summarised per top-level package at the end; `$(BIN)/coverage report` after a
# run lists every file.  `make test COV=0` runs without it (the tracer costs
# pure-Python tests about a fifth of their wall time).
COV ?= 1
test: $(DEV_STAMP)
ifeq ($(COV),1)
	$(BIN)/python -m pytest tests --cov --cov-report= --durations=15
	$(BIN)/coverage json -q -o coverage.json
	$(BIN)/python -m placewise.benchmarks.coverage_table coverage.json
else
	$(BIN)/python -m pytest tests --durations=15
endif

# Style, types, and the import contracts of pyproject.toml (the layering).
lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p placewise
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build *.egg-info
