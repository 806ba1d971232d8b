# Crowdlabel: `make run` serves the embedded platform, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# The pure cores (tests/test_pure_cores.py lists the same): no framework imports, and mypy-clean.
MYPY_PATHS := annotation/geometry.py annotation/pipeline.py annotation/pipeline_events.py annotation/imagecheck.py annotation/final_evidence.py annotation/queue/contract.py consensus/calibration.py consensus/stopping.py consensus/reliability.py consensus/standing.py consensus/evidence_table.py hierarchy/algorithm.py hierarchy/fixture.py multilabel/cooccurrence.py multilabel/model_scores.py multilabel/risk_budget.py review/overlaps.py benchmark/splits.py benchmark/class_selection.py benchmark/read_ahead.py benchmark/dataset_stats.py benchmark/completeness.py benchmark/metrics benchmark/exporters simulator/scenes.py simulator/simulated.py simulator/ground_truth.py simulator/export_score.py simulator/reviewer.py gold/scoring.py gold/sprt.py simulator/gold_simulation.py organize/eta.py organize/ledger.py config/layers.py organize/quality_stats.py hierarchy/queries.py candidates/addresses.py organize/crowd_fit.py predictions/rows.py predictions/thresholds.py simulator/detector.py predictions/score_prior.py

.PHONY: run setup demo test flakes soak journey deploy-check lint format bench schema clean

# Two stamps: serving needs only the runtime requirements; tests, lint and benchmarks the development ones too
# (pytest, Chromium's driver, the interop readers: several hundred MB more).
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed

$(RUNTIME): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(DEV): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

## setup: migrate the database and load the demo data (what `make run` does before serving)
setup: $(RUNTIME)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

## run: the platform on 127.0.0.1:8000 with embedded defaults (SQLite, eager Celery, local files, demo data)
run: setup
	@echo ""
	@echo "Crowdlabel is at http://$(HOST):$(PORT)/  (worker page /worker/, API docs /api/docs/, admin /admin/)"
	$(PY) manage.py runserver $(HOST):$(PORT)

## test: lint, type check of the pure cores, migration check and the whole test suite
test: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy $(MYPY_PATHS)
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

## flakes: the suite (or FLAKE_ARGS: `--changed main`, `-- tests/consensus`) in FLAKE_RUNS random orders; lists every
## test that did not pass every time, with the seeds that replay it (tests/flake_hunt.py)
FLAKE_RUNS ?= 3
FLAKE_ARGS ?=
flakes: $(DEV)
	$(PY) tests/flake_hunt.py --runs $(FLAKE_RUNS) $(FLAKE_ARGS)

## soak: the whole platform under a hostile crowd with faults for 60 s (tests/faults/test_soak.py, PostgreSQL via
## DATABASE_URL and redis-server needed; bench/soak.py prints the figures); not part of `make test`
soak: $(DEV)
	$(PY) -m pytest -m soak tests/faults/test_soak.py

## journey: the newcomer's whole journey in real Chromium (tests/e2e/test_newcomer_journey.py, several minutes):
## a dataset, classes, gold, verification, Algorithm 1, boxing, a crowd of 6, a reviewer, a stall, splits, an export;
## not part of `make test`, which it would lengthen by a third
journey: $(DEV)
	$(PY) -m pytest -m journey tests/e2e/test_newcomer_journey.py

## deploy-check: deploy/check.py on the compose file, .env.example and Dockerfile, then the compose services' own
## commands (s3-bucket, migrate, collectstatic, gunicorn, Celery worker and beat) as local processes against
## PostgreSQL (DATABASE_URL), Redis (CROWDLABEL_TEST_BROKER_URL) and moto's S3 server: an upload and an export land
## in the bucket (tests/config/test_deploy_processes.py, about a minute); not part of `make test`
deploy-check: $(DEV)
	$(PY) deploy/check.py
	if docker compose version >/dev/null 2>&1; then \
		docker compose -f deploy/compose.yaml --env-file deploy/.env.example config --quiet; \
	else echo "docker compose is not installed: its own reading of deploy/compose.yaml is skipped"; fi
	$(PY) -m pytest -m deploy tests/config/test_deploy_processes.py

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy $(MYPY_PATHS)

format: $(DEV)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## bench: every benchmark, printing figures and ratios (takes minutes; see bench/README.md).
## `make bench BENCH_ARGS=` is the full mode (bench/load.py then runs 10 minutes of load under faults).
BENCH_ARGS ?= --quick
bench: $(DEV)
	for f in bench/*.py; do echo "== $$f"; $(PY) $$f $(BENCH_ARGS) || exit 1; done

## schema: write the OpenAPI schema to docs/openapi.yaml
schema: $(RUNTIME)
	$(PY) manage.py spectacular --file docs/openapi.yaml --validate --fail-on-warn

clean:
	rm -rf var .pytest_cache .ruff_cache
