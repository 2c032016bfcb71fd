# replyguard — the targets a newcomer types. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RG     := $(VENV)/bin/replyguard

.DEFAULT_GOAL := help
.PHONY: help run test test-fast lint fmt eval torture torture-long bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

run: $(VENV)/.installed ## Build a demo workspace on SQLite from examples/ and show a reply stopping its queue
	$(RG) --db sqlite:///demo.db demo --examples examples --outbox demo-outbox

test: $(VENV)/.installed ## Run the whole suite (SQLite, and PostgreSQL when reachable)
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

test-fast: $(VENV)/.installed ## Unit tests only
	$(PY) -m pytest tests/unit -q

lint: $(VENV)/.installed ## ruff and mypy --strict
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

fmt: $(VENV)/.installed ## Format and autofix
	$(VENV)/bin/ruff format src tests bench
	$(VENV)/bin/ruff check --fix src tests bench

clean: ## Remove the venv and local databases
	rm -rf $(VENV) demo.db demo.db-* demo-outbox .pytest_cache .mypy_cache .ruff_cache

eval: $(VENV)/.installed ## Classification accuracy on ../shared/corpus (read in place)
	$(PY) bench/eval_classifier.py

torture: $(VENV)/.installed ## Fault campaign, long profile, on PostgreSQL (SEED=1); report in bench/results/
	$(PY) bench/torture.py --profile long --seed $(or $(SEED),1) --report bench/results/torture-long.json

torture-long: torture

torture-short: $(VENV)/.installed ## Fault campaign, short profile (the one `make test` runs)
	$(PY) bench/torture.py --profile short --seed $(or $(SEED),1) --report bench/results/torture-short.json

bench: $(VENV)/.installed ## Every benchmark; JSON in bench/results/, plot in docs/benchmarks.png
	$(PY) bench/reply_cancel.py
	$(PY) bench/send_throughput.py
	$(PY) bench/ingest_rate.py
	$(PY) bench/memory.py
	$(PY) bench/plot.py
