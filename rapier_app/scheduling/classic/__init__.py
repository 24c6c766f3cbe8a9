"""The RAPIER paper's comparison schemes (Section V): baseline, routing-only, Varys.

* ``baseline``: ECMP routes, per-flow max-min fair sharing.
* ``routing-only``: each new flow placed on the candidate path that balances load,
  then per-flow max-min fair sharing.
* ``scheduling-only`` (Varys, Chowdhury et al. SIGCOMM 2014): ECMP routes, SEBF
  coflow order, MADD rates, work conservation, preemptive.

Modules: :mod:`.routed` (the shared base: routes, active-flow views, per-flow
max-min fair sharing), :mod:`.baseline` (``baseline``, ``fair``),
:mod:`.routing_only` (``routing-only``), :mod:`.varys` (``scheduling-only``).
Importing this package registers them
(:data:`~rapier_app.scheduling.registry.REGISTRY`).
"""

from . import baseline, routing_only, varys  # noqa: F401  (registers the schedulers)
