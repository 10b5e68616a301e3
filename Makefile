# The user's entry points. Everything runs as root on Debian (the lab needs network namespaces).
#   make demo        the whole pipeline on the virtual rack: discover -> provision -> configure ->
#                    burn-in -> golden list + report (DEMO_NODES=6, FAULTS=inventories/faults/demo.yml)
#   make demo PROFILE=h200-sxm-8x400g   the same on a rack of another platform (docs/lab.md, Platforms:
#                    h200-sxm-8x400g, b200-sxm-8x400g, gb200-nvl72-tray (two racks of 18 trays), mi300x-8x400g)
#   make demo-service  the in-service loop on the lab's Slurm: one health-check drain, one nightly return
#   make test        installs what the tests need (apt + pip + PostgreSQL) and runs the whole suite
#   make unit        fast unit tests only (no root, no lab, no PostgreSQL, no browser)
#   make lint        ruff
#   make install     virtualenv in .venv with bringup/burnin installed
#   make lab-up      start the virtual rack (LAB_NODES=4, FAULTS=inventories/faults/none.yml)
#   make lab-down    stop it (and the demo's) and remove everything they made
#   make provision RACK=r01 [BATCH=32] [PROVISION_ARGS=--dry-run]   discovered nodes -> provisioned
#   make configure RACK=r01 [TAGS=base,nvidia_driver] [BATCH=32] [CONFIGURE_ARGS=--check]   provisioned -> configured
#   make burnin RACK=r01 [STAGES=preflight,gpu,pcie,ib,nccl]   burn in a rack's configured nodes
#   make golden RACK=r01 [FORMAT=hostfile|slurm|json|csv|topology-block] [OUTPUT=file] [GOLDEN_STAGES=..]   golden list
#   make report RACK=r01 [REPORT_DIR=reports]   HTML + JUnit report of the rack's burn-in
#   make accept RACK=r01 DELIVERY=po42 [SOAK=72h] [OUT=dir]   test a delivery against its order (docs/acceptance.md)

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
WORKERS     ?= 4
LAB_NODES   ?= 4
FAULTS      ?=
PYTEST_ARGS ?=
RACK        ?=
STAGES      ?= preflight,gpu,pcie,ib,nccl
DEMO_NODES  ?=
PROFILE     ?=

.PHONY: help install dev system-deps test unit lint lab-up lab-down lab-status burnin clean demo demo-service

help:
	@awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' Makefile

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

# BRINGUP_REQUIRE_ALL turns "cannot run here" skips of lab and PostgreSQL tests into failures,
# and draws the property tests' examples from a fixed seed (tests/conftest.py; `make unit` and
# plain pytest draw new ones each run).
# --dist loadscope: each test module runs on one worker, in its order (the nightly and service
# lab tests walk one rack through a sequence: fail, repair, nightly), and a lab module brings its
# rack up once. (--dist loadgroup does not group here: xdist 3.8 under pytest 9 ignores the mark.)
# --durations: the slowest tests are printed at the end, so a run near the 30-minute budget shows
# where its time went.
test: system-deps dev
	BRINGUP_TEST_PG_URL=$$(bash scripts/start-postgres.sh) BRINGUP_REQUIRE_ALL=1 \
		$(BIN)/pytest -n $(WORKERS) --dist loadscope --durations=20 $(PYTEST_ARGS)

unit: dev
	$(BIN)/pytest -n $(WORKERS) -m "not lab and not postgres and not gpu and not browser" $(PYTEST_ARGS)

lint: dev
	$(BIN)/ruff check bringup burnin tests benchmarks
	$(BIN)/ruff format --check bringup burnin tests benchmarks

lab-up: system-deps install
	$(BIN)/bringup lab up --nodes $(LAB_NODES) $(if $(PROFILE),--profile $(PROFILE)) $(if $(FAULTS),--faults $(FAULTS))

lab-down:
	@if [ -x $(BIN)/bringup ]; then $(BIN)/bringup lab down && $(BIN)/bringup lab down --name demo; \
	else echo "nothing installed, nothing to take down"; fi

# Idempotent: takes down what an earlier demo left, then runs everything again.
demo: system-deps install
	$(BIN)/bringup lab demo $(if $(PROFILE),--profile $(PROFILE)) $(if $(DEMO_NODES),--nodes $(DEMO_NODES)) \
		$(if $(FAULTS),--faults $(FAULTS))

# The in-service loop, shown by its two lab tests (real slurmctld/slurmd, real CLI): a fault makes
# slurmd's health check drain a golden node and `burnin sync` fail it; then a repaired node is
# burnt in by `burnin nightly`, comes back golden and is resumed in Slurm.
demo-service: system-deps install
	$(BIN)/pytest -p no:cacheprovider -q -s -m lab \
		tests/lab/test_service_lab.py::test_a_fault_drains_the_node_and_sync_fails_it \
		tests/lab/test_nightly_lab.py::test_a_repaired_node_is_burnt_in_beside_golden_partners_comes_back_golden_and_resumed

lab-status:
	$(BIN)/bringup lab status

clean: lab-down
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info

burnin: install
	@test -n "$(RACK)" || { echo "usage: make burnin RACK=<rack> [STAGES=preflight,gpu,pcie,ib,nccl]"; exit 2; }
	$(BIN)/burnin run --rack $(RACK) --stages $(STAGES)

# Configuration with Ansible (playbooks/site.yml through ansible-runner): provisioned nodes ->
# configured. TAGS= runs only some roles; CONFIGURE_ARGS=--check reports what would change.
TAGS           ?=
CONFIGURE_ARGS ?=

.PHONY: configure

configure: install
	@test -n "$(RACK)" || { echo "usage: make configure RACK=<rack> [TAGS=base,nvidia_driver] [BATCH=32] [CONFIGURE_ARGS=--check]"; exit 2; }
	$(BIN)/bringup configure --rack $(RACK) --batch $(or $(BATCH),32) $(if $(TAGS),--tags $(TAGS)) $(CONFIGURE_ARGS)

# Golden list and reports. `burnin golden` prints only the export on stdout; with OUTPUT= it
# writes the file atomically. GOLDEN_STAGES= narrows the required stages (a rack without IB).
FORMAT        ?= hostfile
OUTPUT        ?=
GOLDEN_STAGES ?=
MAX_AGE       ?=
REPORT_DIR    ?= reports

.PHONY: golden report

golden: install
	@test -n "$(RACK)" || { echo "usage: make golden RACK=<rack> [FORMAT=hostfile|slurm|json|csv|topology-block] [OUTPUT=file]"; exit 2; }
	@$(BIN)/burnin golden --rack $(RACK) --format $(FORMAT) $(if $(OUTPUT),--output $(OUTPUT)) \
		$(if $(GOLDEN_STAGES),--stages $(GOLDEN_STAGES)) $(if $(MAX_AGE),--max-age $(MAX_AGE))

report: install
	@test -n "$(RACK)" || { echo "usage: make report RACK=<rack> [REPORT_DIR=reports]"; exit 2; }
	$(BIN)/burnin report --rack $(RACK) --html $(REPORT_DIR)/$(RACK).html --junit $(REPORT_DIR)/$(RACK).junit.xml \
		$(if $(GOLDEN_STAGES),--stages $(GOLDEN_STAGES)) $(if $(MAX_AGE),--max-age $(MAX_AGE))

# Acceptance of a delivery (inventories/deliveries/$(DELIVERY).yml); run it again to continue it
# after an interruption, or after the vendor's fixes to re-test the rejected nodes.
DELIVERY ?=
SOAK     ?=
OUT      ?=

.PHONY: accept

accept: install
	@test -n "$(RACK)" -a -n "$(DELIVERY)" || { echo "usage: make accept RACK=<rack> DELIVERY=<order> [SOAK=72h] [OUT=dir]"; exit 2; }
	$(BIN)/burnin accept --rack $(RACK) --delivery $(DELIVERY) $(if $(SOAK),--soak $(SOAK)) $(if $(OUT),--out $(OUT))

# Provisioning: the rack's `provisioner` (pxe, the default, or maas) decides how. Runs as root
# (DHCP port 67). Resumable: run it again after an interruption.
BATCH          ?= 32
PROVISION_ARGS ?=

.PHONY: provision

provision: install
	@test -n "$(RACK)" || { echo "usage: make provision RACK=<rack> [BATCH=32] [PROVISION_ARGS=--dry-run]"; exit 2; }
	$(BIN)/bringup provision --rack $(RACK) --batch $(BATCH) $(PROVISION_ARGS)
