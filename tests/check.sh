#!/bin/bash
# `make check`: unit tests, then integration tests on a real local Slurm
# cluster; ends with one summary line over both, then each skip and why
# (only those tests/skips.allowed names: any other skip failed).
set -u
cd "$(dirname "$0")/.."
rm -f build/tests/unit.counts build/tests/integration.counts build/tests/*.skips
make --no-print-directory unit; unit_rc=$?
make --no-print-directory integration; int_rc=$?
read -r up uf us < build/tests/unit.counts 2>/dev/null || { up=0; uf=1; us=0; }
read -r ip if is < build/tests/integration.counts 2>/dev/null || { ip=0; if=1; is=0; }
echo "total: $((up + ip)) passed, $((uf + if)) failed, $((us + is)) skipped"
cat build/tests/unit.skips build/tests/integration.skips 2>/dev/null | sed 's/^/  skipped: /'
[ "$unit_rc" -eq 0 ] && [ "$int_rc" -eq 0 ]
