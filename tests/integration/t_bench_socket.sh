#!/bin/bash
# `ctrun bench --backend socket` over 2 nodes x 2 ranks: every collective,
# a short sweep; #wrong is 0 at every size (N/A only where nccl-tests has
# it: alltoall in place), busbw = algbw x nccl-tests' factor, algbw =
# bytes / time, nccl-tests' table layout; and the nccl backend fails soft
# on these GPU-less nodes.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"

all_json() {
	srun -N2 --ntasks-per-node=2 "$CTRUN" bench --backend socket -b 8 -e 256K -f 8 -n 3 -w 1 --json all \
		> bench.json
	"$PY" - bench.json <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["nranks"]
assert n == 4 and d["backend"] == "socket" and d["okay"] is True, (n, d["backend"], d["okay"])
assert sorted(x["rank"] for x in d["devices"]) == [0, 1, 2, 3]
# nccl-tests: busbw factor, and the bytes algbw counts (count = the collective's count).
factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
          "alltoall": (n - 1) / n, "broadcast": 1.0}
bytes_of = {"all_reduce": lambda c: c * 4, "broadcast": lambda c: c * 4,
            "all_gather": lambda c: c * 4 * n, "reduce_scatter": lambda c: c * 4 * n,
            "alltoall": lambda c: c * 4 * n}
seen = set()
for t in d["tests"]:
    coll = t["collective"]
    seen.add(coll)
    sizes = [r["size"] for r in t["results"]]
    assert len(sizes) == 6, (coll, sizes)  # 8, 64, ... 256K with -f 8
    for r in t["results"]:
        for where in ("out_of_place", "in_place"):
            m = r[where]
            if coll == "alltoall" and where == "in_place":
                assert m["nwrong"] is None, (coll, r)
            else:
                assert m["nwrong"] == 0, (coll, r)
            assert m["time"] > 0, (coll, r)
            alg = bytes_of[coll](r["count"]) / 1e9 / (m["time"] / 1e6)
            assert abs(m["alg_bw"] - alg) <= 1e-6 * max(alg, 1e-3) + 1e-9, (coll, r, alg)
            assert abs(m["bus_bw"] - m["alg_bw"] * factor[coll]) <= 1e-9 * max(m["bus_bw"], 1), (coll, r)
    assert t["out_of_bounds"]["count"] == 0, t["out_of_bounds"]
    assert t["average_bus_bandwidth"]["bandwidth"] >= 0
assert seen == set(factor), seen
print("ok: 5 collectives x 6 sizes, #wrong 0, busbw = algbw x factor")
P
}
behaviour "all collectives, JSON" all_json

table_layout() {
	srun -N2 --ntasks-per-node=2 "$CTRUN" bench --backend socket -b 1K -e 1M -f 4 -n 3 -w 1 > table.txt
	cat table.txt
	"$PY" - table.txt <<'P'
import sys
lines = open(sys.argv[1]).read().splitlines()
assert any(l.startswith("# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 4(factor)") for l in lines)
assert sum(l.startswith("#  Rank ") for l in lines) == 4
head = [l for l in lines if l.startswith("#       size")]
assert head and head[0].split()[1:] == ["size", "count", "type", "redop", "root", "time", "algbw",
                                        "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"], head
rows = [l.split() for l in lines if l and not l.startswith("#")]
assert [int(r[0]) for r in rows] == [1024, 4096, 16384, 65536, 262144, 1048576], rows
for r in rows:
    assert len(r) == 13 and r[2] == "float" and r[3] == "sum" and r[4] == "-1", r
    assert r[8] == "0" and r[12] == "0", r  # #wrong
    for t, alg, bus in ((r[5], r[6], r[7]), (r[9], r[10], r[11])):
        # busbw = algbw * 2(n-1)/n, both printed with 2 decimals
        assert abs(float(bus) - float(alg) * 1.5) <= 0.0151, r
        want = int(r[0]) / 1e9 / (float(t) / 1e6)
        assert abs(float(alg) - want) <= 0.01 + 0.01 * want, (r, want)
assert "# Out of bounds values : 0 OK" in lines
assert any(l.startswith("# Avg bus bandwidth    : ") for l in lines)
assert "# Collective test concluded: all_reduce_perf" in lines
print("ok: nccl-tests table")
P
}
behaviour "table layout, all_reduce" table_layout

nccl_fails_soft() {
	srun -N1 "$CTRUN" --nproc-per-node 2 bench --backend nccl -b 1K -e 1K -n 1 -w 0 > soft.txt 2> soft.err
	cat soft.err
	grep -q "ctrun: bench: --backend nccl: no CUDA device: using socket backend" soft.err ||
		fail "no fail-soft message"
	grep -q "socket backend" soft.txt || fail "table does not say socket backend"
	grep -q "# Out of bounds values : 0 OK" soft.txt || fail "soft fallback did not run"
}
behaviour "--backend nccl without a GPU fails soft" nccl_fails_soft

usage_errors() {
	run_rc "$CTRUN" bench -g 8 2> usage.err
	assert_eq 2 "$rc" "unknown bench flag"
	grep -q "unknown option '-g'" usage.err || fail "usage message: $(cat usage.err)"
}
behaviour "usage errors are one line, exit 2" usage_errors
behaviour "no bench worker is left" assert_no_leftovers "__worker bench"
