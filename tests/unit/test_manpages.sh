#!/bin/bash
# Unit test of the manual pages against the code, both ways:
#   - every long option of ctrun's command line (runner/config/cli.c
#     longopts) is in ctrun(1), and every --option ctrun(1) names exists in
#     the code (the command line, or the flags bench, cache and hooks parse);
#   - every key of the key table (runner/config/options.c) is in
#     configs/ctrun.ini, from which ctrun.ini(5) is generated, and every key
#     there is in the table;
#   - every stage and mode of ctrun-hook (hooks/main.c) is in ctrun-hook(8);
#   - each page builds with scdoc, and ctrun.ini(5) has every key.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
cd "$(dirname "$0")/../.."
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
check() { # name, the missing ones (empty: ok)
	if [ -z "$2" ]; then ok "$1"; else bad "$1" "$(echo $2)"; fi
}
page=docs/man/ctrun.1.scd
code_opts=$(sed -n '/^static const struct option longopts/,/^};/p' runner/config/cli.c |
	grep -o '{ "[a-z-]*"' | sed 's/{ "/--/; s/"//' | sort -u)
[ "$(echo "$code_opts" | wc -l)" -gt 20 ] || bad "longopts read" "only $(echo "$code_opts" | wc -l)"
missing=""
for o in $code_opts; do grep -q -- "\*$o\*" "$page" || missing+=" $o"; done
check "every command-line option is in ctrun(1)" "$missing"

# Options the page names: in the command line, or a subcommand's parser.
other=$( (grep -oh '"--[a-z_-]*"' runner/check/*.c runner/cmd_*.c | tr -d '"'
	grep -oh '{ "[a-z_-]*", [a-z_]*_argument' runner/check/*.c | sed 's/{ "/--/; s/".*//') | sort -u)
missing=""
for o in $(grep -o '\*--[a-z_-][a-z_-]*\*' "$page" | tr -d '*' | grep -vx -- -- | sort -u); do
	grep -qx -- "$o" <<<"$code_opts$(printf '\n%s' $other)" || missing+=" $o"
done
check "every option in ctrun(1) exists in the code" "$missing"

table=$(grep 'K_[A-Z]*, OFF(' runner/config/options.c | grep -o '{ "[a-z]*", "[a-z_]*",' | sed 's/{ "\([a-z]*\)", "\([a-z_]*\)",/\1.\2/' | sort -u)
[ "$(echo "$table" | wc -l)" -gt 20 ] || bad "key table read" "only $(echo "$table" | wc -l)"
ini=$(awk '/^\[/ { s = substr($0, 2, index($0, "]") - 2) } /^;[a-z_]+ =/ { k = substr($0, 2); sub(/ =.*/, "", k); print s "." k }' configs/ctrun.ini | sort -u)
check "every key of the code is in configs/ctrun.ini" "$(comm -23 <(echo "$table") <(echo "$ini"))"
check "every key of configs/ctrun.ini is in the code" "$(comm -13 <(echo "$table") <(echo "$ini"))"

hook_modes=$(grep -o 'ctrun-hook \[--verbose\] \[[a-zA-Z|]*\]\|ctrun-hook \[--verbose\] [a-z]*\|ctrun-hook [a-z-]*-files' hooks/main.c |
	grep -o '[a-zA-Z-]*' | grep -v '^ctrun-hook$\|^verbose$' | sort -u)
missing=""
for m in $hook_modes; do grep -q "\*$m\*" docs/man/ctrun-hook.8.scd || missing+=" $m"; done
[ -n "$hook_modes" ] || missing="(no modes read from hooks/main.c)"
check "every ctrun-hook mode is in ctrun-hook(8)" "$missing"

if command -v scdoc > /dev/null; then
	tmp=$(mktemp -d)
	err=""
	docs/man/mkini.sh configs/ctrun.ini > "$tmp/ini.scd" || err+=" mkini.sh"
	for p in "$page" docs/man/ctrun-hook.8.scd "$tmp/ini.scd"; do
		scdoc < "$p" > "$tmp/out" 2> "$tmp/err" || err+=" $p: $(cat "$tmp/err")"
	done
	check "every page builds with scdoc" "$err"
	missing=""
	for k in $ini; do grep -q -- "^\*${k#*.}\* = \|, \*${k#*.}\* = " <(sed 's/\\_/_/g' "$tmp/ini.scd") || missing+=" $k"; done
	check "ctrun.ini(5) has every key" "$missing"
	rm -rf "$tmp"
else
	bad "every page builds with scdoc" "scdoc is not installed (make deps installs it)"
fi
echo "[==========] $((passed + failed)) test(s) run."
[ "$failed" -eq 0 ] && echo "[  PASSED  ] $passed test(s)." || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
