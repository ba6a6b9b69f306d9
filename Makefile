# trajpipe: `make publish` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE_RUNS ?= 120
SAMPLE_EPOCHS ?= 2

.PHONY: venv publish test fuzz lint bench clean

$(BIN)/trajpipe: pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,ray]"
	touch $@

venv: $(BIN)/trajpipe

data/sample/labels.jsonl: | $(BIN)/trajpipe
	$(BIN)/trajpipe synth --out data/sample --runs $(SAMPLE_RUNS) --epochs $(SAMPLE_EPOCHS) --seed 7 > /dev/null

publish: venv data/sample/labels.jsonl
	$(BIN)/trajpipe run --rebuild --config data/sample.toml
	$(BIN)/trajpipe audit --workdir data

test: venv
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -rs -n 2 --dist loadfile

# property tests with 50× the CI example budget (the hostile-input and edit round-trip suites)
FUZZ_SCALE ?= 50
fuzz: venv
	TRAJPIPE_FUZZ_SCALE=$(FUZZ_SCALE) HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2 \
		tests/test_fuzz_sources.py tests/test_fuzz_pipeline.py tests/test_parsers_hostile.py tests/test_edits.py

lint: venv
	$(BIN)/ruff check pipeline schemas tests bench

clean:
	rm -rf data/state data/ledger data/publish data/sample
