#!/bin/bash
# `make bench`: runs every tests/bench/*.sh (each prints one markdown
# section on stdout, progress on stderr) and writes docs/benchmarks.md.
# CTRUN_BENCHES="launch.sh net.sh" reruns only those; every section keeps
# its latest result in docs/benchmarks/, so the document is always whole;
# docs/benchmarks/NAME.notes (hand-written: comparisons across commits)
# follows NAME.md and no run overwrites it.
# Benchmarks measure; they never fail a build on a number.
set -euo pipefail
cd "$(dirname "$0")/../.."
sections=docs/benchmarks
mkdir -p "$sections"
for b in ${CTRUN_BENCHES:-$(cd tests/bench && ls *.sh | grep -v '^run.sh$')}; do
	echo "bench: $b ($(date -u +%H:%M:%S))" >&2
	out=$sections/${b%.sh}.md
	if bash "tests/bench/$b" > "$out.tmp"; then
		{ cat "$out.tmp"; echo; echo "_Measured $(date -u +%Y-%m-%d) by \`CTRUN_BENCHES=$b make bench\`._"; echo; } > "$out"
	else
		echo "bench: $b failed; keeping its previous section" >&2
	fi
	rm -f "$out.tmp"
done
{
	echo "# Benchmarks"
	echo
	echo "Written by \`make bench\` on this project's machine kind ($(nproc) cores, shared with"
	echo "other work: wall times vary between runs; each section gives medians and the raw runs)."
	echo "Each section names the exact commands it measured; targets come from the issues."
	echo
	# NAME.notes (hand-written, never overwritten by a run) follows NAME.md.
	for s in launch cache container net; do
		[ -f "$sections/$s.md" ] && cat "$sections/$s.md"
		[ -f "$sections/$s.notes" ] && cat "$sections/$s.notes"
	done
	for f in "$sections"/*.md; do
		case $(basename "$f" .md) in launch | cache | container | net) ;; *)
			cat "$f"
			[ -f "${f%.md}.notes" ] && cat "${f%.md}.notes" ;;
		esac
	done
	:
} > docs/benchmarks.md
echo "bench: wrote docs/benchmarks.md" >&2
