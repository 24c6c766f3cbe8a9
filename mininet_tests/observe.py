"""Watch a running controller as an operator would: a real Prometheus scraping its
``/metrics`` and a headless Chromium showing its dashboard.

Used by tests/emulation/test_observability.py.  Both programs are Debian's
(``prometheus``, ``chromium``, ``chromium-driver``; ``scripts/install.sh``); each is
started here on a free loopback port with its own temporary files and stopped by
its PID, never the machine's system service.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Dict, List, Optional

from rapier_app.errors import RapierError

from .ryuproc import free_port

PROMETHEUS = "/usr/bin/prometheus"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DASHBOARD = "/rapier/v1/dashboard"


class ObserveError(RapierError, RuntimeError):
    """Prometheus or Chromium missing, or not answering in time."""


def _need(path: str, package: str) -> None:
    if not os.access(path, os.X_OK):
        raise ObserveError(f"{path} missing: install Debian's {package} "
                           f"(bash scripts/install.sh)")


class Prometheus:
    """A Prometheus server scraping ``targets`` (``host:port`` of controllers'
    ``/metrics``) every ``interval_s`` seconds, with its configuration and storage
    under ``workdir``; as a context manager it starts and stops (by PID).

    Attributes after start: ``url`` (``http://127.0.0.1:PORT``), ``proc``.
    """

    def __init__(self, targets: List[str], workdir: str, interval_s: float = 1.0):
        _need(PROMETHEUS, "prometheus")
        self.targets = list(targets)
        self.workdir = workdir
        self.interval_s = interval_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "Prometheus":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = 30.0) -> None:
        """Write ``prometheus.yml``, start the server and wait until it is ready.

        Raises:
            ObserveError: it exited or was not ready within ``timeout_s`` (s).
        """
        os.makedirs(self.workdir, exist_ok=True)
        conf = os.path.join(self.workdir, "prometheus.yml")
        iv = f"{self.interval_s:g}s"
        with open(conf, "w") as fh:
            fh.write(f"global:\n  scrape_interval: {iv}\n  evaluation_interval: {iv}\n"
                     f"scrape_configs:\n  - job_name: rapier\n    scrape_interval: {iv}\n"
                     f"    scrape_timeout: {iv}\n    metrics_path: /metrics\n"
                     f"    static_configs:\n      - targets: {json.dumps(self.targets)}\n")
        self.log = open(os.path.join(self.workdir, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={conf}",
             f"--storage.tsdb.path={os.path.join(self.workdir, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ObserveError(f"prometheus exited {self.proc.returncode}: "
                                   f"{self._tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ObserveError(f"prometheus not ready within {timeout_s} s: {self._tail()}")

    def _tail(self) -> str:
        try:
            with open(os.path.join(self.workdir, "prometheus.log"), "rb") as fh:
                return fh.read()[-1500:].decode(errors="replace")
        except OSError:
            return ""

    def query(self, expr: str) -> List[dict]:
        """``GET /api/v1/query?query=expr``: the result vector (list of
        ``{"metric": {...}, "value": [t, "v"]}``).

        Raises:
            ObserveError: the answer's status is not ``success``.
        """
        q = urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=5) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise ObserveError(f"query {expr!r}: {body}")
        return body["data"]["result"]

    def targets_health(self) -> List[str]:
        """The ``health`` of each active scrape target (``up``, ``down``, ``unknown``)."""
        with urllib.request.urlopen(self.url + "/api/v1/targets", timeout=5) as r:
            body = json.loads(r.read())
        return [t["health"] for t in body["data"]["activeTargets"]]

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after 10 s)."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if getattr(self, "log", None) is not None:
            self.log.close()
            self.log = None


def chromium(width: int = 1400, height: int = 780):
    """A Selenium WebDriver on headless Chromium, both Debian's (no download: the
    driver's path is given, so Selenium Manager is not asked for one).  The caller
    quits it (``driver.quit()``).

    Raises:
        ObserveError: chromium or chromedriver missing.
    """
    _need(CHROMIUM, "chromium")
    _need(CHROMEDRIVER, "chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--disable-extensions", "--no-first-run", f"--window-size={width},{height}"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


#: One reading of the dashboard's DOM (a script run in the page): the switches drawn,
#: the coflow rows with their progress, the links' utilisation, the CDF's points.
READ_JS = """
const rows = {};
document.querySelectorAll('#coflows tr[data-coflow]').forEach(tr => {
  rows[tr.getAttribute('data-coflow')] = {
    progress: parseFloat(tr.getAttribute('data-progress')),
    bar: tr.querySelector('.bar .fill').style.width,
    state: tr.children[1].textContent, decision: tr.children[2].textContent,
    expected: tr.children[6].textContent};
});
const links = {};
document.querySelectorAll('#fabric line[data-link]').forEach(l => {
  links[l.getAttribute('data-link')] = {util: parseFloat(l.getAttribute('data-util') || '0'),
                                        cls: l.getAttribute('class'),
                                        info: l.querySelector('title').textContent};
});
const cdf = document.querySelector('#cdf path.cdf-line');
return {switches: [...document.querySelectorAll('#fabric [data-switch]')]
          .map(g => g.getAttribute('data-switch')),
        hosts: [...document.querySelectorAll('#fabric [data-host]')]
          .map(g => g.getAttribute('data-host')),
        rows: rows, links: links,
        cdf_points: cdf ? parseInt(cdf.getAttribute('data-points')) : 0,
        updated: document.body.getAttribute('data-updated'),
        status: document.getElementById('status').textContent};
"""


def read_dashboard(driver) -> Dict[str, object]:
    """One reading of the page (:data:`READ_JS`): ``switches``, ``hosts``, ``rows``
    (coflow id -> progress 0..1, bar width, state, decision, expected completion),
    ``links`` ("u-v" -> utilisation, class, hover text), ``cdf_points``, ``updated``
    (the controller's clock at the last poll, s, as text) and ``status``."""
    return driver.execute_script(READ_JS)


def keep_artefact(path: str) -> Optional[str]:
    """Copy ``path`` into ``$RAPIER_ARTEFACTS`` when that is set; returns the copy."""
    dest = os.environ.get("RAPIER_ARTEFACTS")
    if not dest:
        return None
    os.makedirs(dest, exist_ok=True)
    return shutil.copy(path, dest)


__all__ = ["CHROMEDRIVER", "CHROMIUM", "DASHBOARD", "ObserveError", "PROMETHEUS",
           "Prometheus", "READ_JS", "chromium", "keep_artefact", "read_dashboard"]
