#!/bin/bash
# `make check`: unit tests, the unit tests again under ASan + UBSan, a short
# pass of every fuzz target, then integration tests on real local Slurm
# clusters; ends with one summary line over all, then each skip and why
# (only those tests/skips.allowed names: any other skip failed).
set -u
cd "$(dirname "$0")/.."
rm -f build/tests/*.counts build/san/tests/*.counts build/tests/*.skips build/san/tests/*.skips \
	build/fuzz/fuzz.counts
make --no-print-directory unit; unit_rc=$?
make --no-print-directory unit-san; san_rc=$?
make --no-print-directory fuzz-short; fuzz_rc=$?
make --no-print-directory integration; int_rc=$?
read -r up uf us < build/tests/unit.counts 2>/dev/null || { up=0; uf=1; us=0; }
read -r sp sf ss < build/san/tests/unit.counts 2>/dev/null || { sp=0; sf=1; ss=0; }
read -r fp ff fs < build/fuzz/fuzz.counts 2>/dev/null || { fp=0; ff=1; fs=0; }
read -r ip if is < build/tests/integration.counts 2>/dev/null || { ip=0; if=1; is=0; }
echo "total: $((up + sp + fp + ip)) passed, $((uf + sf + ff + if)) failed," \
	"$((us + ss + fs + is)) skipped (unit $up, unit under ASan+UBSan $sp, fuzz targets $fp," \
	"integration $ip)"
cat build/tests/unit.skips build/san/tests/unit.skips build/tests/integration.skips 2>/dev/null |
	sed 's/^/  skipped: /'
[ "$unit_rc" -eq 0 ] && [ "$san_rc" -eq 0 ] && [ "$fuzz_rc" -eq 0 ] && [ "$int_rc" -eq 0 ]
