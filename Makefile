# The user's entry points. Everything runs as root on Debian (the lab needs network namespaces).
#   make install     virtualenv in .venv with bringup/burnin installed
#   make test        installs what the tests need (apt + pip + PostgreSQL) and runs the whole suite
#   make unit        fast unit tests only (no root, no lab, no PostgreSQL)
#   make lint        ruff
#   make lab-up      start the virtual rack (LAB_NODES=4, FAULTS=inventories/faults/none.yml)
#   make lab-down    stop it and remove everything it made
#   make burnin RACK=r01 [STAGES=preflight,gpu,pcie]   burn in a rack's configured nodes

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
WORKERS     ?= 4
LAB_NODES   ?= 4
FAULTS      ?=
PYTEST_ARGS ?=
RACK        ?=
STAGES      ?= preflight,gpu,pcie

.PHONY: help install dev system-deps test unit lint lab-up lab-down lab-status burnin clean

help:
	@sed -n '2,10p' Makefile | sed 's/^# //'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e '.[lab,postgres]'
	@echo "installed: $(BIN)/bringup, $(BIN)/burnin"

dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'

system-deps:
	bash scripts/install-system-deps.sh

# BRINGUP_REQUIRE_ALL turns "cannot run here" skips of lab and PostgreSQL tests into failures.
test: system-deps dev
	BRINGUP_TEST_PG_URL=$$(bash scripts/start-postgres.sh) BRINGUP_REQUIRE_ALL=1 \
		$(BIN)/pytest -n $(WORKERS) $(PYTEST_ARGS)

unit: dev
	$(BIN)/pytest -n $(WORKERS) -m "not lab and not postgres and not gpu" $(PYTEST_ARGS)

lint: dev
	$(BIN)/ruff check bringup burnin tests benchmarks
	$(BIN)/ruff format --check bringup burnin tests benchmarks

lab-up: system-deps install
	$(BIN)/bringup lab up --nodes $(LAB_NODES) $(if $(FAULTS),--faults $(FAULTS))

lab-down:
	@if [ -x $(BIN)/bringup ]; then $(BIN)/bringup lab down; else echo "nothing installed, nothing to take down"; fi

lab-status:
	$(BIN)/bringup lab status

clean: lab-down
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info

burnin: install
	@test -n "$(RACK)" || { echo "usage: make burnin RACK=<rack> [STAGES=preflight,gpu,pcie]"; exit 2; }
	$(BIN)/burnin run --rack $(RACK) --stages $(STAGES)
