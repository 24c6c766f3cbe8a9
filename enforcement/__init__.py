"""Host-side rate enforcement for RAPIER: the ``rapier-agent`` daemon.

* :mod:`enforcement.tc` builds Linux traffic-control commands (one HTB class plus one
  u32 filter per limited flow) as plain data and plans the difference between the
  limits in force and the limits asked for.  Nothing in it runs a process.
* :mod:`enforcement.agent` is the daemon: a small HTTP/JSON API (TCP or Unix socket)
  that validates requests, applies the plan through one ``tc -batch`` process per
  change and removes its qdisc on exit.
* :mod:`enforcement.client` is the project's one JSON-over-HTTP client (TCP or Unix
  socket), used by the controller, the emulation runner and the tests.

Units: rates in bit/s, sizes in bytes, times in seconds.
"""
