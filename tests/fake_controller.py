"""A stand-in for the controller's REST contract for open coflows (WSGI, for the
client's tests until the controller serves it): POST coflows (open), POST flows,
POST close, POST done, GET coflow, GET health; bearer token; 409 overlap naming both
flows; 400 naming the field."""

import json
import re

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class Refuse(Exception):
    def __init__(self, status, field, msg):
        super().__init__(msg)
        self.status, self.field, self.msg = status, field, msg


def _flow(f, i):
    if not isinstance(f, dict):
        raise Refuse(400, f"flows[{i}]", "expected an object")
    for k in f:
        if k not in ("src", "dst", "protocol", "src_port", "dst_port", "size_bytes"):
            raise Refuse(400, f"flows[{i}].{k}", "unknown field")
    for k in ("src", "dst"):
        if not isinstance(f.get(k), str):
            raise Refuse(400, f"flows[{i}].{k}", "expected a host name or IPv4")
    if f.get("protocol", "tcp") not in ("tcp", "udp"):
        raise Refuse(400, f"flows[{i}].protocol", "expected tcp or udp")
    for k in ("src_port", "dst_port"):
        v = f.get(k)
        if v is not None and (not isinstance(v, int) or not 1 <= v <= 65535):
            raise Refuse(400, f"flows[{i}].{k}", f"expected 1..65535, got {v!r}")
    if f.get("src_port") is None and f.get("dst_port") is None:
        raise Refuse(400, f"flows[{i}].dst_port", "src_port or dst_port required")
    s = f.get("size_bytes")
    if s is not None and (not isinstance(s, int) or s < 1):
        raise Refuse(400, f"flows[{i}].size_bytes", "expected an integer >= 1")
    return dict(f, protocol=f.get("protocol", "tcp"))


def _overlap(a, b):
    if (a["src"], a["dst"], a["protocol"]) != (b["src"], b["dst"], b["protocol"]):
        return False
    return all(a.get(k) is None or b.get(k) is None or a[k] == b[k]
               for k in ("src_port", "dst_port"))


class FakeController:
    def __init__(self, token=None):
        self.token, self.coflows, self.requests = token, {}, []

    def live(self):
        for cid, cf in self.coflows.items():
            for i, f in enumerate(cf["flows"]):
                if not f.get("done"):
                    yield f"{cid}/{i}", f

    def _add(self, cid, flows):
        cf = self.coflows[cid]
        if not isinstance(flows, list) or not flows:
            raise Refuse(400, "flows", "expected a non-empty list")
        new = [_flow(f, i) for i, f in enumerate(flows)]
        for i, f in enumerate(new):
            for name, g in self.live():
                if _overlap(f, g):
                    raise Refuse(409, f"flows[{i}]", f"overlaps {name}: refused "
                                 f"{cid}/{len(cf['flows']) + i}")
        start = len(cf["flows"])
        cf["flows"].extend(new)
        return [dict(f, index=start + k) for k, f in enumerate(new)]

    def handle(self, method, path, body):
        parts = path.strip("/").split("/")[2:]  # after rapier/v1
        if method == "GET" and parts == ["health"]:
            return 200, {"ok": True}
        if method == "POST" and self.token and self._auth != f"Bearer {self.token}":
            raise Refuse(401, "authorization", "bearer token required")
        if parts[:1] != ["coflows"]:
            raise Refuse(404, "path", "no such path")
        if method == "POST" and len(parts) == 1:
            cid = str(body.get("id"))
            if not ID_RE.match(cid):
                raise Refuse(400, "id", "bad id")
            if cid in self.coflows:
                raise Refuse(409, "id", f"coflow {cid} exists")
            w = body.get("weight", 1.0)
            if not isinstance(w, (int, float)) or w <= 0:
                raise Refuse(400, "weight", "expected a number > 0")
            self.coflows[cid] = {"open": bool(body.get("open")), "flows": [],
                                 "name": body.get("name"), "weight": w}
            try:
                rows = self._add(cid, body["flows"]) if body.get("flows") else []
            except Refuse:
                del self.coflows[cid]
                raise
            return 201, {"id": cid, "open": self.coflows[cid]["open"], "flows": rows}
        cid = parts[1] if len(parts) > 1 else None
        if cid not in self.coflows:
            raise Refuse(404, "id", f"unknown coflow {cid}")
        cf = self.coflows[cid]
        if method == "GET" and len(parts) == 2:
            fin = not cf["open"] and all(f.get("done") for f in cf["flows"])
            return 200, {"id": cid, "open": cf["open"], "name": cf["name"],
                         "state": "done" if fin else "active",
                         "flows": [dict(f, index=i) for i, f in enumerate(cf["flows"])]}
        if method == "POST" and parts[2:] == ["flows"]:
            if not cf["open"]:
                raise Refuse(409, "id", f"coflow {cid} is closed")
            return 201, {"id": cid, "flows": self._add(cid, body.get("flows"))}
        if method == "POST" and parts[2:] == ["close"]:
            cf["open"] = False
            return 200, {"id": cid, "open": False}
        if method == "POST" and len(parts) == 5 and parts[4] == "done":
            i = int(parts[3])
            if i >= len(cf["flows"]):
                raise Refuse(404, "index", "unknown flow")
            fin = not cf["flows"][i].get("done")
            cf["flows"][i]["done"] = True
            return 200, {"finished": fin, "coflow": {"id": cid}}
        raise Refuse(404, "path", "no such path")

    def __call__(self, environ, start_response):
        n = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(n) if n else b""
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
        self._auth = environ.get("HTTP_AUTHORIZATION")
        self.requests.append((method, path))
        try:
            status, out = self.handle(method, path, json.loads(raw) if raw else {})
        except Refuse as r:
            status, out = r.status, {"error": f"{r.field}: {r.msg}", "field": r.field}
        data = json.dumps(out).encode()
        start_response(f"{status} X", [("Content-Type", "application/json"),
                                       ("Content-Length", str(len(data)))])
        return [data]
