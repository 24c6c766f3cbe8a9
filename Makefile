# Two commands for a fresh Debian 12 machine (run as root):
#   make demo   install everything, then run the main job: the RAPIER testbed
#               scenario (Table II) on an emulated leaf-spine with the real
#               controller, host agents and TCP traffic, beside the simulator
#   make test   install everything, then run the whole test suite (unit tests,
#               and emulation tests on Open vSwitch + Mininet)
PY := .venv/bin/python

.PHONY: install demo test test-unit test-emulation sim-demo bench

install:
	bash scripts/install.sh

demo: install
	.venv/bin/rapier-emulate --scenario testbed

test: install
	$(PY) -m pytest -q tests

test-unit: install
	$(PY) -m pytest -q tests --ignore=tests/emulation

test-emulation: install
	$(PY) -m pytest -q tests/emulation

sim-demo: install
	.venv/bin/rapier-sim --scenario testbed --schedulers rapier,scheduling-only,routing-only,baseline

bench: install
	.venv/bin/rapier-bench --quick
