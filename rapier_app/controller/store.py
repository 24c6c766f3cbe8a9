"""The controller's embedded database: accepted coflows and their state (SQLite).

Durability: every coflow the REST API accepts is written here before the
``POST`` returns 201; cancels and completions are written when they happen, the
flows' ``bytes_sent`` every ``store_progress_interval_s``.  On restart
:meth:`Store.load` gives them back and the core carries on
(:meth:`~.registry.RegistryMixin.restore`).

Storage: :mod:`sqlite3` from the standard library, WAL journal (readers do not block
the writer), ``synchronous=NORMAL`` by default (``state_db_sync``: a commit survives
the controller being killed; an OS crash or a power loss can roll back the last
commits) or ``FULL`` (every commit fsynced before it returns).  The schema
version is SQLite's ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`); a file from a
newer version, or one that is not a SQLite database or fails ``PRAGMA quick_check``,
is refused with a :class:`StoreError` naming the file (nothing is overwritten).

Tables::

    meta(key TEXT PRIMARY KEY, value TEXT)       epoch_unix, next_cookie, next_auto
    coflows(seq INTEGER PRIMARY KEY, id TEXT UNIQUE, weight REAL, arrival_s REAL,
            state TEXT, ended_s REAL, finish_s REAL, open INTEGER, name TEXT)
    flows(flow_id TEXT PRIMARY KEY, coflow_id TEXT, idx INTEGER, src TEXT, dst TEXT,
          size_bytes REAL, dst_port INTEGER, cookie INTEGER, bytes_sent REAL,
          finish_s REAL, src_port INTEGER, proto TEXT, size_known INTEGER,
          start_s REAL)

``open`` is 1 while a coflow accepts more flows (``POST /coflows/<id>/flows``);
``size_known`` 0 marks a flow registered without a size, whose ``size_bytes`` is
then the controller's current estimate (:mod:`rapier_app.core.estimate`);
``start_s`` is the time a flow was added (NULL: its coflow's arrival).  Schema 1
(before these columns) is upgraded in place on open.

Times are the controller clock (seconds since ``epoch_unix``, the Unix time the
controller first ran on this file), sizes in bytes.  Thread-safe: one connection
behind a lock (the Ryu app is green threads, the tests use OS threads).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import RapierError

#: Version of the schema below (``PRAGMA user_version``).
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE coflows (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    weight REAL NOT NULL,
    arrival_s REAL NOT NULL,
    state TEXT NOT NULL,
    ended_s REAL,
    finish_s REAL,
    open INTEGER NOT NULL DEFAULT 0,
    name TEXT
);
CREATE INDEX coflows_state ON coflows (state, seq);
CREATE TABLE flows (
    flow_id TEXT PRIMARY KEY,
    coflow_id TEXT NOT NULL REFERENCES coflows (id),
    idx INTEGER NOT NULL,
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    size_bytes REAL NOT NULL,
    dst_port INTEGER,
    cookie INTEGER NOT NULL,
    bytes_sent REAL NOT NULL DEFAULT 0,
    finish_s REAL,
    src_port INTEGER,
    proto TEXT NOT NULL DEFAULT 'tcp',
    size_known INTEGER NOT NULL DEFAULT 1,
    start_s REAL
);
CREATE INDEX flows_coflow ON flows (coflow_id, idx);
"""

#: Schema 1 -> 2: open coflows, names, flows matched by source port, UDP, unknown
#: sizes, flows added over time.
_UPGRADE_1_2 = """
ALTER TABLE coflows ADD COLUMN open INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coflows ADD COLUMN name TEXT;
ALTER TABLE flows ADD COLUMN src_port INTEGER;
ALTER TABLE flows ADD COLUMN proto TEXT NOT NULL DEFAULT 'tcp';
ALTER TABLE flows ADD COLUMN size_known INTEGER NOT NULL DEFAULT 1;
ALTER TABLE flows ADD COLUMN start_s REAL
"""


class StoreError(RapierError, RuntimeError):
    """The database cannot be used: corrupt, from a newer version, or a failed write.
    The message names the file."""


@dataclass
class FlowRecord:
    """One stored flow (bytes, seconds on the controller clock)."""

    flow_id: str
    idx: int
    src: str
    dst: str
    size_bytes: float
    dst_port: Optional[int]
    cookie: int
    bytes_sent: float = 0.0
    finish_s: Optional[float] = None
    src_port: Optional[int] = None
    proto: str = "tcp"
    size_known: bool = True
    start_s: Optional[float] = None


@dataclass
class CoflowRecord:
    """One stored coflow: ``state`` is ``active``, ``done`` or ``cancelled``;
    ``flows`` in index order."""

    id: str
    weight: float
    arrival_s: float
    state: str
    ended_s: Optional[float] = None
    finish_s: Optional[float] = None
    flows: List[FlowRecord] = field(default_factory=list)
    seq: Optional[int] = None
    open: bool = False
    name: Optional[str] = None


class Store:
    """The SQLite database of one controller.

    Args:
        path: database file (its directory is created), or ``:memory:``.

    Raises:
        StoreError: the file is not a SQLite database, fails ``quick_check``, or
        has a schema version newer than :data:`SCHEMA_VERSION` (or unknown).
    """

    def __init__(self, path: str, sync: str = "normal"):
        if sync not in ("normal", "full"):
            raise StoreError(f"state_db_sync: must be normal or full, got {sync!r}")
        self.path = path
        self.sync = sync
        self._lock = threading.RLock()
        self._depth = 0
        if path != ":memory:":
            d = os.path.dirname(os.path.abspath(path))
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"state_db {path}: cannot create directory {d}: {exc}") \
                    from None
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"state_db {path}: cannot open: {exc}") from None
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"state_db {path}: not a usable RAPIER database ({exc}); move "
                             f"it away to start empty") from None
        except StoreError:
            self._db.close()
            raise

    def _open(self) -> None:
        db = self._db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"state_db {self.path}: schema version {version} is newer than "
                             f"this controller's ({SCHEMA_VERSION}); upgrade the controller "
                             f"or use another file")
        check = db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise StoreError(f"state_db {self.path}: corrupt (quick_check: {check}); move it "
                             f"away to start empty")
        if self.path != ":memory:":
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"state_db {self.path}: WAL journal refused ({mode})")
        db.execute(f"PRAGMA synchronous={self.sync.upper()}")
        db.execute("PRAGMA foreign_keys=ON")
        if version == 0:
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                raise StoreError(f"state_db {self.path}: has tables but no schema version; "
                                 f"not a RAPIER database")
            db.execute("BEGIN")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        elif version == 1:
            db.execute("BEGIN")
            for stmt in _UPGRADE_1_2.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")

    # -- transactions ---------------------------------------------------------------
    @contextmanager
    def batch(self) -> Iterator["Store"]:
        """One transaction for every write inside the block (nestable); rolled back
        and re-raised as :class:`StoreError` if a write fails."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self
            except BaseException as exc:
                self._depth -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"state_db {self.path}: write failed: {exc}") from None
                raise
            else:
                self._depth -= 1
                if outer:
                    try:
                        self._db.execute("COMMIT")
                    except sqlite3.Error as exc:
                        self._db.execute("ROLLBACK")
                        raise StoreError(f"state_db {self.path}: commit failed: {exc}") \
                            from None

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed into the file)."""
        with self._lock:
            self._db.close()

    # -- meta -------------------------------------------------------------------------
    def get_meta(self, key: str) -> Optional[str]:
        """The value stored under ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value) -> None:
        """Store ``str(value)`` under ``key``."""
        with self.batch():
            self._db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) "
                             "DO UPDATE SET value=excluded.value", (key, str(value)))

    # -- writes -----------------------------------------------------------------------
    def add_coflow(self, rec: CoflowRecord, pause: Optional[Callable[[], None]] = None
                   ) -> None:
        """Insert a new coflow and its flows (one transaction; ``pause`` as
        :meth:`add_flows`).

        Raises:
            StoreError: the write failed (e.g. the id exists).
        """
        with self.batch():
            cur = self._db.execute(
                "INSERT INTO coflows(id, weight, arrival_s, state, ended_s, finish_s, open, "
                "name) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                (rec.id, rec.weight, rec.arrival_s, rec.state, rec.ended_s, rec.finish_s,
                 int(bool(rec.open)), rec.name))
            rec.seq = cur.lastrowid
            self.add_flows(rec.id, rec.flows, pause)

    #: flows inserted by one statement of :meth:`add_flows` (and between two calls
    #: of its ``pause``)
    PAUSE_ROWS = 64

    def add_flows(self, cid: str, flows: Sequence[FlowRecord],
                  pause: Optional[Callable[[], None]] = None) -> None:
        """Insert flows of coflow ``cid`` (already stored; one transaction), up to
        :attr:`PAUSE_ROWS` flows per statement (``executemany`` lets go of the
        interpreter lock at every row: with a native thread running Python, each
        row then waited for the lock).  ``pause()`` (when given) is called between
        two statements, inside the transaction: the caller must keep every other
        writer out meanwhile (the controller's lock).

        Raises:
            StoreError: the write failed (e.g. a flow id exists).
        """
        head = ("INSERT INTO flows(flow_id, coflow_id, idx, src, dst, size_bytes, dst_port, "
                "cookie, bytes_sent, finish_s, src_port, proto, size_known, start_s) VALUES ")
        row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        step = self.PAUSE_ROWS
        with self.batch():
            for i in range(0, len(flows), step):
                if i and pause is not None:
                    pause()
                part = flows[i:i + step]
                args = []
                for f in part:
                    args.extend((f.flow_id, cid, f.idx, f.src, f.dst, f.size_bytes, f.dst_port,
                                 f.cookie, f.bytes_sent, f.finish_s, f.src_port, f.proto,
                                 int(bool(f.size_known)), f.start_s))
                self._db.execute(head + ", ".join([row] * len(part)), args)

    def set_open(self, cid: str, is_open: bool) -> None:
        """Set coflow ``cid``'s ``open`` flag (False: closed, no more flows)."""
        with self.batch():
            self._db.execute("UPDATE coflows SET open=? WHERE id=?", (int(bool(is_open)), cid))

    def update_sizes(self, rows: Sequence[Tuple[str, float, bool]]) -> None:
        """Set ``(flow_id, size_bytes, size_known)`` of flows (an estimate that grew,
        or the size of a flow of unknown size once it finished)."""
        if not rows:
            return
        with self.batch():
            self._db.executemany("UPDATE flows SET size_bytes=?, size_known=? WHERE flow_id=?",
                                 [(v, int(bool(k)), fid) for fid, v, k in rows])

    def update_coflow(self, cid: str, state: str, ended_s: Optional[float],
                      finish_s: Optional[float]) -> None:
        """Set a coflow's state, end time and finish time (s)."""
        with self.batch():
            self._db.execute("UPDATE coflows SET state=?, ended_s=?, finish_s=? WHERE id=?",
                             (state, ended_s, finish_s, cid))

    def update_flows(self, rows: Sequence[Tuple[str, float, Optional[float]]]) -> None:
        """Set ``(flow_id, bytes_sent, finish_s)`` of flows."""
        if not rows:
            return
        with self.batch():
            self._db.executemany("UPDATE flows SET bytes_sent=?, finish_s=? WHERE flow_id=?",
                                 [(b, t, fid) for fid, b, t in rows])

    # -- reads ------------------------------------------------------------------------
    def _records(self, where: str, args: Sequence) -> List[CoflowRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, id, weight, arrival_s, state, ended_s, finish_s, open, name "
                "FROM coflows " + where, tuple(args)).fetchall()
            recs = [CoflowRecord(id=r[1], weight=r[2], arrival_s=r[3], state=r[4],
                                 ended_s=r[5], finish_s=r[6], seq=r[0], open=bool(r[7]),
                                 name=r[8]) for r in rows]
            by_id: Dict[str, CoflowRecord] = {r.id: r for r in recs}
            ids = list(by_id)
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                q = ("SELECT coflow_id, flow_id, idx, src, dst, size_bytes, dst_port, cookie, "
                     "bytes_sent, finish_s, src_port, proto, size_known, start_s FROM flows "
                     "WHERE coflow_id IN (%s) ORDER BY coflow_id, idx" % ",".join("?" * len(chunk)))
                for row in self._db.execute(q, chunk):
                    by_id[row[0]].flows.append(FlowRecord(*row[1:12], bool(row[12]), row[13]))
        return recs

    def load(self, ended_after_s: Optional[float] = None) -> List[CoflowRecord]:
        """Coflows to hold in memory after a restart, in arrival order: every active
        one, and the ended ones whose ``ended_s`` is after ``ended_after_s`` (all of
        them when None)."""
        if ended_after_s is None:
            return self._records("ORDER BY seq", ())
        return self._records("WHERE state='active' OR ended_s > ? ORDER BY seq",
                             (ended_after_s,))

    def get(self, cid: str) -> Optional[CoflowRecord]:
        """The coflow ``cid``, or None."""
        recs = self._records("WHERE id=?", (cid,))
        return recs[0] if recs else None

    def page(self, states: Optional[Sequence[str]], limit: int,
             offset: int) -> Tuple[int, List[str]]:
        """(number of coflows in ``states`` (all when None), their ids in arrival
        order from ``offset``, at most ``limit``)."""
        where, args = "", []
        if states:
            where = "WHERE state IN (%s)" % ",".join("?" * len(states))
            args = list(states)
        with self._lock:
            total = self._db.execute("SELECT count(*) FROM coflows " + where,
                                     args).fetchone()[0]
            ids = [r[0] for r in self._db.execute(
                "SELECT id FROM coflows " + where + " ORDER BY seq LIMIT ? OFFSET ?",
                args + [int(limit), int(offset)])]
        return total, ids
