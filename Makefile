# Two commands for a fresh Debian 13 or 12 machine (run as root):
#   make demo   install everything, then run the main job: the RAPIER testbed
#               scenario (Table II) on an emulated leaf-spine with the real
#               controller, host agents and TCP traffic, beside the simulator
#   make test   install everything, then run the whole test suite (unit tests,
#               and emulation tests on Open vSwitch + Mininet)
# RAPIER_VENV (default .venv), RAPIER_OF_STACK (os-ken or ryu) and RAPIER_PYTHON go to
# scripts/install.sh through the environment.
VENV := $(or $(RAPIER_VENV),.venv)
PY := $(VENV)/bin/python

.PHONY: install demo test test-unit test-emulation sim-demo bench install-services test-fresh-root

install:
	bash scripts/install.sh

demo: install
	$(VENV)/bin/rapier-emulate --scenario testbed

test: install
	$(PY) -m pytest -q tests

test-unit: install
	$(PY) -m pytest -q tests --ignore=tests/emulation

test-emulation: install
	$(PY) -m pytest -q tests/emulation

sim-demo: install
	$(VENV)/bin/rapier-sim --scenario testbed --schedulers rapier,scheduling-only,routing-only,baseline

bench: install
	$(VENV)/bin/rapier-bench --quick

# Opt-in, as root: systemd units for rapier-controller and rapier-agent
# (scripts/install-services.sh; enables and starts nothing).
install-services: install
	bash scripts/install-services.sh

# The README's two commands in a fresh Debian 13 root (debootstrap + chroot).
test-fresh-root:
	RAPIER_ROOT_NET=host bash scripts/fresh-root.sh 'make demo && make test'
