"""A Python stand-in for bench/loadgen (same plan in, same result out) for machines without a
Go toolchain. Used by ``--smoke`` only: it checks that every verb answers, its timings are
not comparable with the Go load generator's.

``python -m bench.pyloadgen < plan.json``
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_cache: dict[str, bytes] = {}


def _body(call: dict[str, Any]) -> bytes:
    if "parts" not in call:
        if call["body"] not in _cache:
            _cache[call["body"]] = Path(call["body"]).read_bytes()
        return _cache[call["body"]]
    out = []
    for p in call["parts"]:
        if p.startswith("="):
            out.append(p[1:].encode())
        else:
            if p not in _cache:
                _cache[p] = Path(p).read_bytes()
            out.append(_cache[p])
    return b"".join(out)


class _Conn:
    def __init__(self, base: str, timeout: float) -> None:
        u = urlsplit(base)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"refusing non-loopback target {base}")
        self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)

    def do(self, path: str, body: bytes) -> tuple[bytes, float]:
        t0 = time.perf_counter()
        self.c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        data = r.read()
        d = time.perf_counter() - t0
        if r.status != 200:
            raise RuntimeError(f"{path}: HTTP {r.status}: {data[:300]!r}")
        json.loads(data)
        return data, d


def _parallel(
    base: str, calls: list[tuple[str, bytes]], conc: int, timeout: float, deadline: float
) -> tuple[list[float], list[str], str]:
    lat: list[float] = []
    errs: list[str] = []
    first = [""]
    lock = threading.Lock()
    it = iter(enumerate(calls))

    def worker() -> None:
        conn = _Conn(base, timeout)
        while True:
            with lock:
                nxt = next(it, None)
            if nxt is None or time.monotonic() > deadline:
                return
            i, (path, body) = nxt
            try:
                data, d = conn.do(path, body)
                with lock:
                    lat.append(d * 1e6)
                    if i == 0:
                        first[0] = data.decode(errors="replace")
            except Exception as exc:
                with lock:
                    errs.append(str(exc))
                conn = _Conn(base, timeout)

    ts = [threading.Thread(target=worker) for _ in range(max(1, conc))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return lat, errs, first[0]


def run(plan: dict[str, Any]) -> dict[str, Any]:
    base, timeout = plan["base"], plan.get("timeout_seconds", 60)
    deadline = time.monotonic() + plan.get("max_seconds", 30)
    if plan["mode"] == "load":
        body = _body({"body": plan["body"]})
        call = (plan["path"], body)
        _parallel(
            base, [call] * plan.get("warmup", 0), plan.get("concurrency", 1), timeout, deadline
        )
        t0 = time.perf_counter()
        lat, errs, first = _parallel(
            base, [call] * plan["requests"], plan.get("concurrency", 1), timeout, deadline
        )
        return {
            "requests": len(lat) + len(errs),
            "errors": len(errs),
            "first_error": errs[0] if errs else "",
            "elapsed_seconds": time.perf_counter() - t0,
            "latencies_us": lat,
            "body_bytes": len(body),
            "last_response": first,
            "stopped_by_time": time.monotonic() > deadline,
        }
    steps = [
        {
            "name": s["name"],
            "calls": len(s["calls"]),
            "body_bytes": sum(len(_body(c)) for c in s["calls"]),
            "elapsed_us": [],
            "latencies_us": [],
        }
        for s in plan["steps"]
    ]
    out: dict[str, Any] = {
        "cycles": 0,
        "errors": 0,
        "first_error": "",
        "total_us": [],
        "steps": steps,
        "stopped_by_time": False,
    }
    for cyc in range(plan.get("warmup", 0) + plan.get("repeat", 1)):
        record = cyc >= plan.get("warmup", 0)
        tc = time.perf_counter()
        for s, sr in zip(plan["steps"], steps, strict=True):
            t0 = time.perf_counter()
            lat, errs, _ = _parallel(
                base,
                [(c["path"], _body(c)) for c in s["calls"]],
                s.get("concurrency", 1),
                timeout,
                float("inf"),
            )
            out["errors"] += len(errs)
            if errs and not out["first_error"]:
                out["first_error"] = errs[0]
            if record:
                sr["elapsed_us"].append((time.perf_counter() - t0) * 1e6)
                sr["latencies_us"] += lat
        if record:
            out["total_us"].append((time.perf_counter() - tc) * 1e6)
            out["cycles"] += 1
    return out


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
