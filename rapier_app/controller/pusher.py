"""The agent pusher of the Ryu app: rate sets to the host agents, off the decision
path (a mixin of :class:`~.app.RapierController`; the stack's threads, its ``hub``).

The app queues one :class:`~.pushes.AgentPush` per host whose set changed
(``_pending``, latest set wins) and sets ``_push_event``; the pusher green thread
(:meth:`AgentPusherMixin._push_loop`) sends them.  Uses the app's ``core``,
``settings``, ``_lock``, ``_pending``, ``_push_event``, ``_agents_down`` and
``now``.
"""

from __future__ import annotations

import logging
import time

from . import agent_client
from .stack import hub
from .startup import STARTUP

LOG = logging.getLogger("rapier.controller")


class AgentPusherMixin:
    """Pushes of the rate sets to the host agents (see the module docstring)."""

    #: most agent pushes in flight at once (green threads of one push round)
    PUSH_CONCURRENCY = 32

    def push_pending(self) -> None:
        """Send every queued agent push (latest set per host); failures are logged
        and the host is marked for a retry.

        The queued hosts are pushed concurrently (up to :attr:`PUSH_CONCURRENCY`
        green threads), so a decision's limits reach all its hosts in about one
        agent round trip instead of one per host (measured on the emulated VL2: the
        third host of a coflow had its limits 74 ms after the decision when pushed
        one after the other).  One host's pushes stay in order: a newer set queued
        meanwhile goes out in the next round."""
        while self._pending:
            batch = []
            while self._pending and len(batch) < self.PUSH_CONCURRENCY:
                batch.append(self._pending.popitem(last=False))
            if len(batch) == 1:
                self._push_one(*batch[0])
            else:
                hub.joinall([hub.spawn(self._push_one, host, push) for host, push in batch])

    def _push_one(self, host: str, push) -> None:
        """One ``PUT /v1/flows`` to ``host``'s agent, its outcome recorded (and its
        wall-clock time in ``rapier_agent_push_seconds``)."""
        t0 = time.perf_counter()
        try:
            try:
                agent_client.put_flows(push.url, push.body(), self.settings.agent_timeout_s,
                                       token=self.settings.agent_token)
            finally:
                self.core.metrics.push_latency.observe(time.perf_counter() - t0)
            LOG.debug("agent %s: %d limits pushed", host, len(push.flows))
            STARTUP.mark("first_push")
            with self._lock:
                self.core.push_succeeded(host, push.gen)
            if host in self._agents_down:
                self._agents_down.discard(host)
                LOG.info("agent %s reachable again", host)
        except agent_client.AgentError as exc:
            # Warn once per outage; retries (every 5 s) log at debug level.
            level = logging.DEBUG if host in self._agents_down else logging.WARNING
            LOG.log(level, "agent %s unreachable or refused the rate set: %s", host, exc)
            self._agents_down.add(host)
            with self._lock:
                delay = self.core.push_failed(host, self.now())
            LOG.debug("agent %s: next retry in %.1f s", host, delay)

    def _push_loop(self) -> None:
        """The pusher green thread: one :meth:`push_pending` round per wake-up."""
        while True:
            self._push_event.wait()
            self._push_event.clear()
            try:
                self.push_pending()
            except Exception:  # noqa: BLE001
                LOG.exception("agent pusher failed")


__all__ = ["AgentPusherMixin"]
