#!/bin/bash
# `make check`: unit tests, the unit tests again under ASan + UBSan, then
# integration tests on real local Slurm clusters; ends with one summary line
# over all, then each skip and why (only those tests/skips.allowed names:
# any other skip failed).
set -u
cd "$(dirname "$0")/.."
rm -f build/tests/*.counts build/san/tests/*.counts build/tests/*.skips build/san/tests/*.skips
make --no-print-directory unit; unit_rc=$?
make --no-print-directory unit-san; san_rc=$?
make --no-print-directory integration; int_rc=$?
read -r up uf us < build/tests/unit.counts 2>/dev/null || { up=0; uf=1; us=0; }
read -r sp sf ss < build/san/tests/unit.counts 2>/dev/null || { sp=0; sf=1; ss=0; }
read -r ip if is < build/tests/integration.counts 2>/dev/null || { ip=0; if=1; is=0; }
echo "total: $((up + sp + ip)) passed, $((uf + sf + if)) failed, $((us + ss + is)) skipped" \
	"(unit $up, unit under ASan+UBSan $sp, integration $ip)"
cat build/tests/unit.skips build/san/tests/unit.skips build/tests/integration.skips 2>/dev/null |
	sed 's/^/  skipped: /'
[ "$unit_rc" -eq 0 ] && [ "$san_rc" -eq 0 ] && [ "$int_rc" -eq 0 ]
