"""The Ryu shell's glue for coflows whose flows come over time (:mod:`.openflows`).

A mixin of :class:`~.app.RapierController` (kept out of ``app.py``): the REST routes
``POST /coflows/<id>/flows`` and ``POST /coflows/<id>/close`` call these methods,
which call one core method under the app's lock and send what it returns, like
:meth:`~.app.RapierController.submit`.  No Ryu import here.
"""

from __future__ import annotations

from typing import Any, Dict


class OpenFlowsAppMixin:
    """``add_flows`` and ``close_coflow`` of the Ryu app (uses its ``core``,
    ``_lock``, ``_gate``, ``_gated``, ``now``, ``_enqueue``, ``flush``, ``worker``,
    ``_decide_batch`` and ``_core_call``)."""

    def add_flows(self, coflow_id: str, body) -> Dict[str, Any]:
        """``POST /coflows/<id>/flows``: validate, record and queue a decision (the
        decision worker takes it, as for a new coflow; without a running worker it
        is taken here).  Returns ``{"id", "open", "flows": [flow view, ...]}``, the
        views of the flows just added (``index``: their new indices).

        Raises:
            RequestError: 404/409/400/413/503 (:meth:`~.openflows.OpenFlowsMixin.
            add_flows`); nothing is added then.
        """
        # behind the decision gate: a scheduler running off the event loop reads the
        # snapshot's coflows (their flow lists) and its own per-coflow caches, which
        # adding flows changes (a race seen as numpy shape errors in Algorithm 3)
        with self._gate, self._lock:
            new, acts = self.core.add_flows(coflow_id, body, self.now(), schedule=False)
            dpids = self._enqueue(acts)
        self.flush(dpids)
        if self.worker.running:
            self.worker.put(coflow_id)
        else:
            self._decide_batch([coflow_id])
        with self._lock:
            return {"id": coflow_id, "open": self.core.is_open(coflow_id),
                    "flows": [self.core.flow_view(f) for f in new]}

    def close_coflow(self, coflow_id: str) -> Dict[str, Any]:
        """``POST /coflows/<id>/close``: no more flows (idempotent); returns the
        coflow's view.  Raises RequestError 404 (unknown id), 503."""
        self._gated(lambda: self._core_call(lambda now: self.core.close_coflow(coflow_id, now)))
        with self._lock:
            return self.core.coflow_view(coflow_id)


__all__ = ["OpenFlowsAppMixin"]
