"""``rapier-config``: check a controller configuration before starting the controller.

::

    rapier-config check configs/rapier.conf
    rapier-config check base.conf site.conf --observe-links   # as ryu-manager reads them
    rapier-config check /etc/rapier/controller.conf --workdir /var/lib/rapier

``check FILE [FILE ...]`` reads the oslo.config files as ``ryu-manager
rapier_app.controller --config-file FILE ...`` would (a later file wins) and runs the
controller's own start-up checks on them
(:func:`rapier_app.controller.configcheck.check_config`): option types, bounds and
values, conflicting options, the topology the ``topology`` option names (a spec,
``file:PATH`` or ``discover``), the scheduler, the listen addresses and tokens, and
the state database; nothing is started, no socket opened, no file written.

Output: one line on stdout when the configuration is good (``FILE: ok: scheduler ...
on ...``); otherwise every problem on stderr, one per line, as ``FILE:LINE:
section.option: what is wrong`` (the text after the option is what the controller
prints when it refuses to start), then a count.  Warnings (an unknown ``[DEFAULT]``
key, a key set twice, a token in a file other users can read) are printed too and do
not change the exit status unless ``--strict``.

Exit status: 0 good; 2 a problem (or bad arguments).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from .cli_common import add_common_arguments


def build_parser() -> argparse.ArgumentParser:
    """The ``rapier-config`` argument parser."""
    ap = argparse.ArgumentParser(prog="rapier-config", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    ck = sub.add_parser("check", help="check controller configuration files (exit 0, or 2 "
                                      "with every problem by option and line)")
    ck.add_argument("files", nargs="+", metavar="FILE",
                    help="oslo.config files, in ryu-manager's --config-file order")
    ck.add_argument("--observe-links", action="store_true",
                    help="ryu-manager runs with --observe-links (needed by topology = "
                         "discover)")
    ck.add_argument("--workdir", default=None, metavar="DIR",
                    help="the controller's working directory: relative file:PATH and "
                         "state_db paths are resolved from it (default: the current one)")
    ck.add_argument("--strict", action="store_true", help="warnings count as problems")
    ck.add_argument("--json", action="store_true",
                    help="print {ok, summary, problems: [{file, line, section, option, "
                         "severity, message}]} on stdout")
    add_common_arguments(ap)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-config``; exit status 0 (good) or 2 (a problem, listed on
    stderr, or bad arguments)."""
    args = build_parser().parse_args(argv)
    from .controller.configcheck import check_config

    files = [os.path.abspath(f) if args.workdir else f for f in args.files]
    cwd = os.getcwd()
    try:
        if args.workdir:
            os.chdir(args.workdir)
    except OSError as exc:
        print(f"rapier-config: --workdir: {exc.strerror}: {args.workdir}", file=sys.stderr)
        return 2
    try:
        result = check_config(files, observe_links=args.observe_links)
    finally:
        os.chdir(cwd)
    bad = result.problems if args.strict else result.errors
    names = ", ".join(args.files)
    if args.json:
        print(json.dumps({"ok": not bad, "summary": result.summary, "problems": [
            {"file": p.file, "line": p.line, "section": p.section, "option": p.option,
             "severity": p.severity, "message": p.message} for p in result.problems]},
            indent=1))
        return 2 if bad else 0
    for p in result.problems:
        if p.severity == "error" or args.quiet < 1:
            print(str(p), file=sys.stderr)
    if bad:
        n = len(bad)
        print(f"rapier-config: {names}: {n} problem{'s' if n > 1 else ''}", file=sys.stderr)
        return 2
    if args.quiet < 1:
        print(f"{names}: ok: {result.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
