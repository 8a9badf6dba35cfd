# hpc.slurm_gres: make setup | make demo | make test
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
DEMO_DIR ?= out/demo

.PHONY: setup system-deps demo test lint unit integration molecule bench clean

setup: $(VENV)/.stamp .cache/collections/ansible_collections/hpc/slurm_gres

$(VENV)/.stamp: requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

.cache/collections/ansible_collections/hpc/slurm_gres:
	bash scripts/link-collection.sh

system-deps:
	bash scripts/setup-system.sh

demo: setup
	bash scripts/demo.sh $(DEMO_DIR)

lint: setup
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production

unit: setup
	$(BIN)/pytest -q tests/unit

integration: system-deps setup
	$(BIN)/pytest -q tests/integration

molecule: system-deps setup
	bash scripts/run-molecule.sh

test: system-deps setup lint
	$(BIN)/pytest -q tests/unit tests/integration
	bash scripts/run-molecule.sh

# Every benchmark runs; the target fails when any does (the render one when it misses its 1.25x target, the
# hostile one when a pathological inventory takes over a second or 300 MB).
bench: setup
	rc=0; $(PY) bench/render_bench.py --json bench/out/render.json || rc=$$?; \
	$(PY) bench/deploy_bench.py --json bench/out/deploy.json || rc=$$?; \
	$(PY) bench/hostile_bench.py --json bench/out/hostile.json || rc=$$?; exit $$rc

clean:
	rm -rf out bench/out .pytest_cache
