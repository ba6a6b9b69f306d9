# trajpipe: `make publish` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE_RUNS ?= 120
SAMPLE_EPOCHS ?= 2

.PHONY: venv publish test test-fast fuzz lint lock bench clean

# the versions CI tested (requirements-dev.txt, pinned), then the package itself without resolving again
$(BIN)/trajpipe: pyproject.toml requirements-dev.txt
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

venv: $(BIN)/trajpipe

data/sample/labels.jsonl: | $(BIN)/trajpipe
	$(BIN)/trajpipe synth --out data/sample --runs $(SAMPLE_RUNS) --epochs $(SAMPLE_EPOCHS) --seed 7 > /dev/null

publish: venv data/sample/labels.jsonl
	$(BIN)/trajpipe run --rebuild --config data/sample.toml
	$(BIN)/trajpipe audit --workdir data

test: venv
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -rs -n 2 --dist loadfile

# the suite without the end-to-end tests marked slow (a real pipeline run killed at six points, the sample build)
test-fast: venv
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not slow"

# property tests with 50× the CI example budget (the hostile-input and edit round-trip suites)
FUZZ_SCALE ?= 50
fuzz: venv
	TRAJPIPE_FUZZ_SCALE=$(FUZZ_SCALE) HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2 \
		tests/test_fuzz_sources.py tests/test_fuzz_pipeline.py tests/test_parsers_hostile.py tests/test_edits.py

# what CI runs before the tests (and .pre-commit-config.yaml on every commit)
lint: venv
	$(BIN)/ruff check pipeline schemas tests bench
	$(BIN)/ruff format --check pipeline schemas tests bench
	$(BIN)/mypy

# re-resolve the pins from pyproject.toml in a scratch venv (needs the package index)
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --upgrade pip
	.lock-venv/bin/python -m pip install -q -e ".[dev,ray]"
	{ echo "# Pinned versions of everything \`make venv\` installs (runtime + the dev and ray extras), Python 3.11."; \
	  echo "# CI installs exactly these. Regenerate with \`make lock\` after changing pyproject.toml's dependencies."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | LC_ALL=C sort -f; } > requirements-dev.txt
	rm -rf .lock-venv

clean:
	rm -rf data/state data/ledger data/publish data/sample
