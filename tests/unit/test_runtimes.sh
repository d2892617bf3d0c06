#!/bin/bash
# Unit test of the runtime names against the driver table
# (runner/container/rt/drivers.h, CTR_DRIVERS): the places that cannot read
# the table (other layers, the shell completion, the documents) name the
# same runtimes, in the same order, plus "auto":
#   - each driver of the list is defined once, in a folder of rt/, under its
#     own name;
#   - options.c's choices, the completion, configs/ctrun.ini, ctrun(1),
#     --help (cli.c) and docs/cli.md list exactly them;
#   - docs/containers.md has a row for each.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
cd "$(dirname "$0")/../.."
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
same() { # name, got (words), wanted (words)
	if [ "$(echo $2)" = "$(echo $3)" ]; then ok "$1"; else bad "$1" "'$(echo $2)', table: '$(echo $3)'"; fi
}
rt=runner/container/rt
table=$(sed -n '/^#define CTR_DRIVERS(X)/,/^$/p' $rt/drivers.h | grep -o 'X([a-z0-9_]*)' | sed 's/X(\(.*\))/\1/')
[ "$(echo "$table" | wc -w)" -ge 4 ] || bad "driver table read" "only '$(echo $table)'"

missing=""
for d in $table; do
	defs=$(grep -l "^const struct ctr_driver ctr_driver_$d = {" $rt/*/*.c 2>/dev/null | wc -l)
	name=$(cat $rt/*/*.c | sed -n "/^const struct ctr_driver ctr_driver_$d = {/,/^};/p" |
		sed -n 's/^\t\.name = "\(.*\)",$/\1/p')
	[ "$defs" = 1 ] && [ "$name" = "$d" ] || missing+=" $d($defs definitions, name '$name')"
done
[ -z "$missing" ] && ok "each driver is defined once, in its folder, under its name" ||
	bad "each driver is defined once, in its folder, under its name" "$missing"

want="auto $table"
same "options.c's choices" \
	"$(sed -n '/^static const char \*const runtimes\[\]/,/;/p' runner/config/options.c | grep -o '"[a-z0-9_]*"' | tr -d '"')" "$want"
same "bash completion" \
	"$(sed -n 's/.*--runtime) COMPREPLY=($(compgen -W "\([^"]*\)".*/\1/p' completions/ctrun.bash)" "$want"
same "configs/ctrun.ini" \
	"$(grep -B1 '^;runtime = ' configs/ctrun.ini | head -1 | sed 's/^; //; s/ | / /g')" "$want"
same "ctrun(1)" "$(sed -n 's/^\*--runtime\* \([a-z|]*\)$/\1/p' docs/man/ctrun.1.scd | tr '|' ' ')" "$want"
same "--help (cli.c)" "$(grep -o -- '--runtime [a-z|]*' runner/config/cli.c | head -1 | sed 's/--runtime //' | tr '|' ' ')" "$want"
same "docs/cli.md" "$(grep -o -- '--runtime [a-z|]*' docs/cli.md | head -1 | sed 's/--runtime //' | tr '|' ' ')" "$want"

missing=""
for d in $want; do
	grep -q "^| \`$d\`\|^| \`[a-z]*\`, \`$d\`" docs/containers.md || missing+=" $d"
done
[ -z "$missing" ] && ok "docs/containers.md has a row for each runtime" ||
	bad "docs/containers.md has a row for each runtime" "$missing"

echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
