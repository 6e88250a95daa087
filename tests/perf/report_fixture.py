# SPDX-License-Identifier: MIT
"""A tutti-bw --json document made up for the report's browser test, in the
shape of a real one: N ranks on H hosts, shm inside hosts and tcp between
them, cells that differ only by noise (one-way 4.70-4.80 GB/s, latency
10.1-11.1 us) beside one slow rank, so that the page must neither magnify
the noise nor hide the slow rank, and a graph whose diagonals cross.

    python3 tests/perf/report_fixture.py RANKS HOSTS > bw.json"""
import json
import sys


def cells(n, host, value):
    out = []
    for a in range(n):
        for b in range(n):
            if a != b:
                cls = "NODE" if host[a] == host[b] else "NET"
                out.append({"a": a, "b": b, "class": cls, "median": value(a, b, cls), "p5": None, "p95": None,
                            "samples": 9, "stable": True, "outliers": 0, "cv": 0.01})
    return out


def transport(name, n, host, serves):
    def uni(a, b, cls):
        v = 4.70 + 0.1 * ((a * 7 + b * 3) % 11) / 10.0 if cls == "NODE" else 1.18 + 0.01 * ((a + b) % 3)
        return round(v / 2 if 3 in (a, b) else v, 3)

    def lat(a, b, cls):
        return round((10.1 + ((a * 5 + b) % 11) / 10.0) * (1 if cls == "NODE" else 4), 2)

    keep = lambda cs: [c for c in cs if serves(c["class"])]
    cls = "NODE" if name == "shm" else ("NET" if len(set(host)) > 1 else "NODE")
    rows = [{"bytes": 1 << k, "iters": 100, "bw_peak": 5.0 * k / 22, "bw_median": 4.7 * k / 22,
             "bw_mean": 4.6 * k / 22, "bw_p5": 4.4 * k / 22, "bw_p95": 4.9 * k / 22, "bw_cv": 0.02,
             "bw_stable": True, "bw_outliers": 0, "bibw_median": 4.0 * k / 22, "bibw_p5": None, "bibw_p95": None,
             "lat_min": 10.0 + k, "lat_median": 10.5 + k, "lat_p5": 10.1 + k, "lat_p95": 11.0 + k,
             "lat_p99": 12.0 + k, "lat_outliers": 0, "msg_rate": 1e5} for k in range(3, 23, 3)]
    return {"name": name, "status": "measured",
            "matrices": {"uni": {"bytes": 4 << 20, "unit": "GB/s", "cells": keep(cells(n, host, uni)),
                                 "stragglers": [{"rank": 3, "matrix": "uni", "ratio": 0.5}] if n > 3 else []},
                         "bi": {"bytes": 4 << 20, "unit": "GB/s",
                                "cells": [c for c in keep(cells(n, host, uni)) if c["a"] < c["b"]], "stragglers": []},
                         "lat": {"bytes": 8, "unit": "us",
                                 "cells": [c for c in keep(cells(n, host, lat)) if c["a"] < c["b"]], "stragglers": []}},
            "sweeps": [{"a": 0, "b": 1 if cls == "NODE" else n - 1, "class": cls, "rows": rows}],
            "others_cpus": 0.1,
            "verdicts": [{"a": 0, "b": 1, "class": cls, "measured_gbps": 4.7, "figure": "the sweep's bw_med at 4 MiB",
                          "cv": 0.02, "bytes": 4 << 20, "expected_gbps": 5.6, "basis": "a plain copy",
                          "fraction": 0.84, "others_cpus": 0.1, "verdict": "normal", "why": ""}]}


def main():
    n, hosts = int(sys.argv[1]), int(sys.argv[2])
    host = [r * hosts // n for r in range(n)]
    doc = {"tool": "tutti-bw", "schema": 1, "version": "fixture", "date": "2026-01-01T00:00:00Z", "nranks": n,
           "nhosts": hosts, "memcpy_gbps": 9.5, "machine": {"cpus": 16, "ranks_here": n // hosts, "load1": 0.2},
           "ranks": [{"rank": r, "host": "host%d" % host[r], "host_index": host[r], "pid": 100 + r, "cpus": 16,
                      "numa": 0, "first_cpu": r} for r in range(n)],
           "options": {"transports": "all", "size": 4 << 20, "lat_size": 8, "tolerance": 0.02},
           "transports": [transport("shm", n, host, lambda c: c == "NODE")]}
    if hosts > 1:
        doc["transports"].append(transport("tcp", n, host, lambda c: True))
    json.dump(doc, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
