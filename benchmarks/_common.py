"""Helpers shared by the benchmark scripts of this folder (``event_core.py``,
``mutants.py``): the scripts run as ``python benchmarks/NAME.py``, so this folder is
on ``sys.path`` and they import it as ``_common``."""

from __future__ import annotations

import json
from typing import Any, Optional


def write_json(path: Optional[str], rows: Any, indent: int = 1) -> None:
    """Write ``rows`` (anything :func:`json.dump` takes) to ``path`` as JSON, indented
    by ``indent`` spaces, without a trailing newline; nothing when ``path`` is empty or
    None (the scripts' ``--json`` not given).

    Raises:
        OSError: the file cannot be written.
        TypeError: ``rows`` holds something JSON cannot represent.
    """
    if not path:
        return
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=indent)
