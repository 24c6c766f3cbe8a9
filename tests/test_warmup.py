"""No cold start: after :func:`rapier_app.warmup.ensure_warm` (what the controller
runs before it accepts coflows, and ``scripts/install.sh`` runs for every scheduler)
the first decision compiles no kernel.  Each case runs in a fresh process on an empty
numba cache (``NUMBA_CACHE_DIR``), as after a fresh install."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Counts the compiled signatures of every numba kernel of rapier_app.kernels across
# the controller core's first decision.
CODE = r"""
import importlib, json, pkgutil, sys
import rapier_app.kernels as K
from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings
from rapier_app.warmup import ensure_warm

name, warm = sys.argv[1], sys.argv[2] == "1"
mods = [importlib.import_module(f"rapier_app.kernels.{m.name}")
        for m in pkgutil.iter_modules(K.__path__)]
disp = [v for m in mods for v in vars(m).values() if hasattr(v, "signatures")
        and hasattr(v, "py_func")]
if warm:
    ensure_warm(name)
core = make_core(Settings(scheduler=name, topology="leafspine:3,3,3", agent_url="", state_db="off"))
before = sum(len(d.signatures) for d in disp)
flows = [{"src": f"h{i}", "dst": f"h{i + 5}", "size_bytes": 10**6 * i, "dst_port": 5000 + i}
         for i in range(1, 5)]
_, acts = core.submit({"flows": flows}, 0.0)
print(json.dumps({"kernels": len(disp), "compiled_in_decision":
                  sum(len(d.signatures) for d in disp) - before,
                  "decision": core.decision[list(core.coflows)[0]]}))
"""


def _first_decision(tmp_path, name, warm):
    cache = tmp_path / f"numba-{name}-{int(warm)}"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", CODE, name, "1" if warm else "0"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["aalo", "rapier"])
def test_first_decision_compiles_nothing_after_warm_up(tmp_path, name):
    warm = _first_decision(tmp_path, name, warm=True)
    assert warm["kernels"] > 10
    assert warm["compiled_in_decision"] == 0, warm
    assert warm["decision"] not in ("queued", "fallback"), warm


def test_without_warm_up_the_first_decision_compiles(tmp_path):
    cold = _first_decision(tmp_path, "aalo", warm=False)
    assert cold["compiled_in_decision"] > 0, cold


def test_prepare_loads_numbas_target_before_any_kernel(tmp_path):
    # kernels.prepare (the controller calls it before its REST server listens) builds
    # numba's CPU target, which imports numba's array lowering and scipy.linalg: the
    # long interpreter-lock holds of the first kernel load.  Building the controller
    # core and every scheduler does not do it; prepare does, once.
    code = ("import sys; import rapier_app.controller.core; import rapier_app.scheduling as S;"
            "S.load_all(); from rapier_app import kernels;"
            "a = 'numba.np.arraymath' in sys.modules; t = kernels.prepare();"
            "print(a, 'numba.np.arraymath' in sys.modules, t is not None and t >= 0)")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    env.pop("RAPIER_KERNELS", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "True"]
    env["RAPIER_KERNELS"] = "numpy"
    out = subprocess.run([sys.executable, "-c", "from rapier_app import kernels;"
                          "print(kernels.prepare())"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.stdout.strip() == "None", out.stderr[-2000:]
