# replyguard — the targets a newcomer types. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RG     := $(VENV)/bin/replyguard

.DEFAULT_GOAL := help
.PHONY: help run test test-long test-fast screens lint fmt eval eval-bounces classify-cost torture torture-long bench clean lock

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

LOCK         := requirements/dev.lock
RUNTIME_LOCK := requirements/runtime.lock

# replyguard needs Python 3.11 or newer (PYTHON=python3.12 make ... picks another one). A venv
# whose creation or install failed is removed, so the next `make` starts again instead of
# running on half an install.
define make_venv
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: replyguard needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1)" \
	       "(run with PYTHON=python3.11 make ...)" >&2; exit 2; }
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }
	$(PY) -m pip install --quiet -r $(1) || { rm -rf $(VENV); exit 1; }
	$(PY) -m pip install --quiet --no-deps -e . || { rm -rf $(VENV); exit 1; }
endef

# Exactly the locked versions, then the package itself without resolving anything again: a
# fresh machine gets what the suite was last run with. `make run` needs the runtime only
# (requirements/runtime.lock, the same versions as the dev lock); `make test` adds the rest.
$(VENV)/.runtime: pyproject.toml $(RUNTIME_LOCK)
	$(call make_venv,$(RUNTIME_LOCK))
	touch $@

$(VENV)/.installed: pyproject.toml $(LOCK)
	$(call make_venv,$(LOCK))
	touch $(VENV)/.runtime $@

lock: ## Re-resolve every dependency into requirements/dev.lock (after editing pyproject.toml)
	$(PYTHON) -m venv .lock-venv && .lock-venv/bin/pip install --quiet uv
	.lock-venv/bin/uv pip compile pyproject.toml --extra dev --extra postgres --python-version 3.11 \
		--no-header --annotation-style line -o $(LOCK)
	.lock-venv/bin/uv pip compile pyproject.toml -c $(LOCK) --python-version 3.11 \
		--no-header --annotation-style line -o $(RUNTIME_LOCK)
	rm -rf .lock-venv

venv: $(VENV)/.installed

DEMO_DB       := sqlite:///demo.db
DEMO_USER     := demo@replyguard.test
DEMO_PASSWORD := watch the queue stop
# The demo runs ten simulated days from Monday 2026-12-07; `up` carries on from where it ended.
DEMO_NOW      := 2026-12-17T06:00:00Z
# `make run PORT=8001` when 8000 is taken; the demo's notice links follow the port.
PORT          ?= 8000
DEMO_URL      := http://127.0.0.1:$(PORT)

run: $(VENV)/.runtime ## Demo workspace on SQLite, then web + worker at http://127.0.0.1:8000 (PORT=8001 for another port; Ctrl-C stops)
	@$(PY) -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", $(PORT)))' 2>/dev/null || { \
	  echo "error: port $(PORT) is taken (another replyguard?): stop it, or run: make run PORT=8001" >&2; exit 1; }
	REPLYGUARD_PUBLIC_URL=$(DEMO_URL) $(RG) --db $(DEMO_DB) demo --examples examples --outbox demo-outbox
	printf '%s\n' '$(DEMO_PASSWORD)' | $(RG) --db $(DEMO_DB) users add $(DEMO_USER) --name "Demo user"
	@printf '\n  replyguard is starting at %s\n' '$(DEMO_URL)'
	@printf '  sign in as %s, password %s\n' '$(DEMO_USER)' '$(DEMO_PASSWORD)'
	@printf '  (the demo lives on a simulated clock: it is %s there)\n' '$(DEMO_NOW)'
	@printf '  in another shell: .venv/bin/replyguard --db %s threads list\n\n' '$(DEMO_DB)'
	REPLYGUARD_PUBLIC_URL=$(DEMO_URL) REPLYGUARD_TRANSPORT=maildir:demo-outbox \
		$(RG) --db $(DEMO_DB) --now $(DEMO_NOW) up --port $(PORT)

# Two runs: everything that may share the machine on 3 processes (the tests wait on sockets,
# subprocesses and PostgreSQL a third of the time, so 3 keep 2 cores busy), then the tests marked
# `serial` (races and the fault campaign, which measure what concurrency does) alone, with
# nothing else running. A serial test refuses to run inside an xdist worker (tests/conftest.py).
test: $(VENV)/.installed ## Run the suite (SQLite, and PostgreSQL when reachable); the long fault runs: test-long
	$(PY) -m pytest -n 3 -m 'not serial and not long' $(PYTEST_ARGS)
	$(PY) -m pytest -m 'serial and not long' $(PYTEST_ARGS) || [ $$? -eq 5 ]  # 5: PYTEST_ARGS selected none

# The long fault runs and slow properties, one at a time: the short fault campaign (and the
# proof that its checker catches a broken guard), a worker killed at every named point, the
# hypothesis state machine on PostgreSQL. `.ci/run` runs them after `make test`.
test-long: $(VENV)/.installed ## The long fault runs and slow properties (PostgreSQL): .ci/run runs them too
	$(PY) -m pytest -m long $(PYTEST_ARGS) || [ $$? -eq 5 ]

screens: $(VENV)/.installed ## Screenshots of every page at 390 and 1,280 px into docs/screens/ (the README's)
	REPLYGUARD_SCREENS=docs/screens $(PY) -m pytest tests/web/test_responsive.py -q -p no:randomly

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

eval: $(VENV)/.installed ## Classification accuracy on ../shared/corpus and the held-out sets (results in bench/out/, ignored)
	$(PY) bench/eval_classifier.py
	$(PY) bench/eval_heldout.py

eval-bounces: $(VENV)/.installed ## Bounce reasons, hard/soft against sisimai, and how many are bound (../shared/corpus-bounces)
	$(PY) bench/eval_bounces.py
	$(PY) bench/eval_bounce_trust.py

classify-cost: $(VENV)/.installed ## CPU and memory of hostile messages: classify and ingest end to end
	$(PY) bench/classify_cost.py

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
