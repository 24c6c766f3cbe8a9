"""Packaging for the RAPIER coflow-aware SDN controller and simulator."""

from setuptools import find_packages, setup

setup(
    name="rapier-coflow",
    version="0.1.0",
    description="Coflow-aware SDN controller: joint routing and scheduling (RAPIER), "
                "flow-level simulator and seed-paper schedulers",
    packages=find_packages(include=["rapier_app", "rapier_app.*", "topologies", "topologies.*",
                                    "enforcement", "enforcement.*", "mininet_tests",
                                    "mininet_tests.*"]),
    # the controller's option table (settings.py) and the dashboard's files (dashboard.py)
    package_data={"rapier_app.controller": ["options.toml", "static/*"]},
    python_requires=">=3.9",  # tomllib from 3.11, tomli before
    install_requires=["networkx>=3", "numpy>=1.24", "scipy>=1.10", "ortools>=9.10", "matplotlib>=3.6",
                      # rapier-experiment run --dask / --jobs, progress bars
                      "dask[distributed]>=2024.1", "tqdm>=4.60",
                      # compiled allocation kernels (rapier_app/kernels/)
                      "numba>=0.59",
                      # topology files (topologies/topofile.py)
                      "PyYAML>=5.4",
                      # the REST layer (rapier_app/controller/wsgiapp.py), on either stack
                      "WebOb>=1.8", "Routes>=2.5",
                      # GET /metrics (rapier_app/controller/metrics.py)
                      "prometheus_client>=0.16",
                      "tomli>=2; python_version < '3.11'"],
    # selenium: the dashboard in headless Chromium (tests/emulation/test_observability.py,
    # with Debian's chromium and chromium-driver from scripts/install.sh)
    extras_require={"test": ["pytest>=7", "pytest-timeout>=2.1", "hypothesis>=6.100",
                             "selenium>=4.11"]},
    entry_points={"console_scripts": [
        "rapier-controller=rapier_app.controller.launcher:main",
        "rapier-sim=rapier_app.cli:main",
        "rapier-check=rapier_app.sim.check_cli:main",
        "rapier-agent=enforcement.agent:main",
        "rapier-emulate=mininet_tests.emulate:main",
        "rapier-bench=rapier_app.experiments.bench:main",
        "rapier-experiment=rapier_app.experiments.cli:main",
        "rapier-topology=rapier_app.topology_cli:main",
        "rapier-config=rapier_app.config_cli:main",
        "rapier-doctor=rapier_app.doctor:main",
    ]},
)
