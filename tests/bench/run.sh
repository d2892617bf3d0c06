#!/bin/bash
# `make bench`: runs every tests/bench/*.sh (each prints one markdown
# section on stdout, progress on stderr) and writes docs/benchmarks.md.
# Benchmarks measure; they never fail a build on a number.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/benchmarks.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "# Benchmarks"
	echo
	echo "Written by \`make bench\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r))."
	echo "Each section names the exact command it measured. Targets come from the issues."
	echo
} > "$tmp"
for b in ${CTRUN_BENCHES:-$(cd tests/bench && ls *.sh | grep -v '^run.sh$')}; do
	echo "bench: $b" >&2
	if ! bash "tests/bench/$b" >> "$tmp"; then
		printf '\n## %s\n\nFAILED to run (see stderr of make bench).\n\n' "$b" >> "$tmp"
	fi
done
mv "$tmp" "$out"
trap - EXIT
echo "bench: wrote $out" >&2
