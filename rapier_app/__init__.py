"""RAPIER: coflow-aware joint routing and scheduling for datacenter networks.

``rapier_app.core`` (model and workloads), ``rapier_app.scheduling`` (schedulers) and
``rapier_app.sim`` (the flow-level simulator) are pure Python: no Ryu, no Mininet,
no tc.  The Ryu application (``rapier_app.controller``) is a thin shell around them.
"""

__version__ = "0.1.0"
