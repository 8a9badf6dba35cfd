# hpc.slurm_gres: make setup | make demo | make test
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# pytest runs in PYTEST_WORKERS processes (pytest-xdist), each test file whole in one of them: the integration
# tests wait on ansible-playbook, slurmd and slurmctld much of the time, so two keep two cores busy.
PYTEST_WORKERS ?= 2
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
DEMO_DIR ?= out/demo

.PHONY: setup system-deps images demo test lint sanity unit integration pytest package compat compat-min molecule \
	galaxy-importer release fresh bench clean

setup: $(VENV)/.stamp .cache/collections/ansible_collections/hpc/slurm_gres

$(VENV)/.stamp: requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

.cache/collections/ansible_collections/hpc/slurm_gres:
	bash scripts/link-collection.sh

system-deps:
	bash scripts/setup-system.sh

# The node tree of every Slurm release of molecule/releases (debootstrap, cached): the molecule images and the
# chroots the integration tests run each release's slurmd and slurmctld in.
images: system-deps
	for suite in $$(awk '!/^#/ && NF {print $$2}' molecule/releases); do bash scripts/build-image.sh $$suite || exit 1; done

# A first run needs ansible-core alone: an ansible-playbook >= 2.14 on PATH, else a small venv of ansible-core
# (.venv-demo, about 60 MB), never the development venv.
demo: .cache/collections/ansible_collections/hpc/slurm_gres
	bash scripts/demo.sh $(DEMO_DIR)

lint: setup
	$(BIN)/yamllint -s .
	# its own ANSIBLE_HOME: a copy of hpc.slurm_gres in ~/.ansible/collections would shadow this checkout
	ANSIBLE_HOME=$(CURDIR)/.cache/ansible-home $(BIN)/ansible-lint --profile production

# ansible-test sanity with tests/sanity/ignore-X.Y.txt (offline-capable; its tool venvs are cached in .cache);
# one test: make sanity TEST=pep8
sanity: setup
	bash scripts/sanity.sh $(if $(TEST),--test $(TEST))

unit: setup
	$(BIN)/pytest -q tests/unit

integration: system-deps setup images
	$(BIN)/pytest -q tests/integration

pytest: system-deps setup images
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile tests/unit tests/integration

# Build the Galaxy tarball, check its file list, install it and run it from the installed copy
package: setup
	$(BIN)/pytest -q tests/integration/test_package.py

# Every ansible-core minor requires_ansible admits (one venv each under .cache/compat; Pythons from pyenv)
compat: system-deps setup
	bash scripts/compat.sh

# The lowest admitted ansible-core only, on Debian's own Python, compared with .venv (part of `make test`)
compat-min: system-deps setup
	bash scripts/compat.sh --min

# Galaxy's own import check on the built tarball (installs galaxy-importer in a throwaway venv)
galaxy-importer: setup
	bash scripts/galaxy-importer.sh

# The release of galaxy.yml's version: changelog, tarball and its install (make package), Galaxy's importer, and
# out/release/hpc-slurm_gres-VERSION.tar.gz
release: setup
	bash scripts/release.sh

# make system-deps setup lint sanity pytest package in a pristine Debian 12 chroot (root; see the script)
fresh:
	bash scripts/check-fresh.sh

molecule: system-deps setup images
	bash scripts/run-molecule.sh

# The node images (downloads and unpacking) build while lint and sanity (CPU) run; -O keeps each one's output
# in one piece.
test: system-deps setup
	$(MAKE) --no-print-directory -j2 -O images lint sanity
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile tests/unit tests/integration
	bash scripts/compat.sh --min
	bash scripts/run-molecule.sh

# Every benchmark runs; the target fails when any does (the render one when it misses its 1.25x target, the
# hostile one when a pathological inventory takes over a second or 300 MB).
bench: setup
	rc=0; $(PY) bench/render_bench.py --json bench/out/render.json || rc=$$?; \
	$(PY) bench/topology_bench.py --json bench/out/topology.json || rc=$$?; \
	$(PY) bench/deploy_bench.py --json bench/out/deploy.json || rc=$$?; \
	$(PY) bench/controller_bench.py --json bench/out/controller.json || rc=$$?; \
	$(PY) bench/hostile_bench.py --json bench/out/hostile.json || rc=$$?; exit $$rc

clean:
	rm -rf out bench/out .pytest_cache .cache/sanity .cache/compat
