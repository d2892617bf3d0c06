#!/bin/bash
# Unit test of the tree itself: the layers the GNUmakefile declares hold.
#   - every header name is unique (a folder's include path could otherwise
#     pick another layer's header of the same name);
#   - a file of each folder cannot include a header of any folder it may not
#     use: that include fails to compile with the folder's include flags;
#   - a library's sub-folders (runner/container/rt/oci/, images/cache/)
#     are reached as "oci/oci.h" by the folders that may use the library,
#     never by a bare header name;
#   - the sources of one library (a folder and its sub-folders, such as
#     runner/container/rt/oci/) have unique file names;
#   - no two modules (a .c and its .h) include each other, directly or
#     through others: the module graph has no cycle;
#   - no library calls a function (or uses a variable) of a library it may
#     not use: each layer's undefined symbols (nm -u) are defined by itself,
#     by the libraries it may use, or by none of ours (libc, json-c, ...).
#     A declaration can point up where an include cannot (rt/ once declared
#     functions implemented above it); the linker's view cannot.  A
#     deliberately upward call is checked to be caught.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
cd "$(dirname "$0")/../.."
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }

# Asked of make alone: not part of the caller's job server.
unset MAKEFLAGS MFLAGS MAKELEVEL
layers=$(make -s --no-print-directory print-layers)
src=$(find core images registry hooks runner spank -name '*.[ch]' | sort)

# 1. Unique header names.
dups=$(for f in $src; do [[ $f == *.h ]] && basename "$f"; done | sort | uniq -d)
if [ -z "$dups" ]; then ok "header names are unique"; else bad "header names are unique" "$dups"; fi

# 2. Each folder sees only its own and its lower layers' headers.
for d in $layers; do
	inc=$(make -s --no-print-directory "print-inc-${d//\//.}")
	allowed=" $(sed 's/-I//g' <<<"$inc") "
	sees=0 blind=0
	for u in $layers; do
		h=$(ls "$u"/*.h 2>/dev/null | head -1)
		[ -n "$h" ] || continue
		if printf '#include "%s"\n' "$(basename "$h")" |
			gcc -std=gnu11 -D_GNU_SOURCE -fsyntax-only $inc $(pkg-config --cflags json-c) -x c - 2>/dev/null; then
			[[ $allowed == *" $u "* ]] || { bad "layer $d" "includes $h, which it may not use"; continue 2; }
			sees=$((sees + 1))
		else
			[[ $allowed == *" $u "* ]] && { bad "layer $d" "cannot include $h, which it may use"; continue 2; }
			blind=$((blind + 1))
		fi
	done
	ok "layer $d: sees $sees folders, an include of the other $blind fails"
done

# 2b. A library's sub-folders (rt/'s driver folders, images/'s cache/,
# unpack/, squash/) are on no include path: their headers are named with
# the folder ("cache/cache.h"), and seen by exactly the folders that may use
# the library; the bare name ("cache.h") is seen by none.
for d in $layers; do
	inc=$(make -s --no-print-directory "print-inc-${d//\//.}")
	allowed=" $(sed 's/-I//g' <<<"$inc") "
	seen=0
	for u in $layers; do
		for s in $(make -s --no-print-directory "print-subs-${u//\//.}"); do
			h=$(ls "$s"/*.h 2>/dev/null | head -1)
			[ -n "$h" ] || continue
			compiles() {
				printf '#include "%s"\n' "$1" |
					gcc -std=gnu11 -D_GNU_SOURCE -fsyntax-only $inc $(pkg-config --cflags json-c) -x c - 2>/dev/null
			}
			if compiles "$(basename "$h")"; then
				bad "layer $d" "includes $h by its bare name: a sub-folder is on its include path"; continue 3
			fi
			if compiles "${h#"$u"/}"; then
				[[ $allowed == *" $u "* ]] || { bad "layer $d" "includes $h, which it may not use"; continue 3; }
				seen=$((seen + 1))
			else
				[[ $allowed == *" $u "* ]] && { bad "layer $d" "cannot include ${h#"$u"/}, which it may use"; continue 3; }
			fi
		done
	done
	ok "layer $d: sees $seen sub-folders by their folder's name, none by a bare name"
done

# 3. A library's sub-folders (rt/'s driver folders) hold no file named as
# another of that library: ar keeps members by base name, so one would
# silently replace the other.
dups=""
for d in $layers; do
	srcs=$(make -s --no-print-directory "print-src-${d//\//.}")
	dup=$(for f in $srcs; do basename "$f"; done | sort | uniq -d)
	[ -z "$dup" ] || dups+=" $d: $(echo $dup)"
done
if [ -z "$dups" ]; then ok "source names are unique within each library"
else bad "source names are unique within each library" "$dups"; fi

# 4. No include cycle between modules (file names without .c/.h; a
# private X_int.h belongs to module X).
edges=$(for f in $src; do
	m=$(basename "${f%.*}"); m=${m%_int}
	sed -n 's/^#include "\([^"]*\)\.h".*/\1/p' "$f" | while read -r h; do
		h=${h%_int}
		[ "$h" != "$m" ] && echo "$m $h"
	done
done | sort -u)
if loop=$(tsort <<<"$edges" 2>&1 >/dev/null) && [ -z "$loop" ]; then
	ok "no include cycle among $(wc -l <<<"$edges") module edges"
else
	bad "no include cycle" "$(tr '\n' ' ' <<<"$loop")"
fi

# 4. No call points up or sideways: what each library needs from outside
# itself (nm -u) is defined by a library it may use, or by none of ours.
# The libraries are those of `make unit` (CTRUN_BUILD), built before it.
# (C collation: join and sort must agree.)
export LC_ALL=C
build=${CTRUN_BUILD:-build}
libfile() { echo "$build/lib/lib${1//\//_}.a"; }
# "SYMBOL LAYER" for every global symbol our libraries define.
defined=$(for d in $layers; do
	f=$(libfile "$d")
	[ -f "$f" ] && nm -A -g --defined-only "$f" 2>/dev/null | awk -v d="$d" '{ print $NF, d }'
done | sort -u)
# Prints "SYMBOL (LAYER)" for each symbol the library file $2 of layer $1
# takes from a library of ours that $1 may not use.
calls_out() {
	local d=$1 f=$2 allowed
	allowed=" $(make -s --no-print-directory "print-inc-${d//\//.}" | sed 's/-I//g') "
	nm -A -u "$f" 2>/dev/null | awk '{ print $NF }' | sort -u |
		join - <(cat <<<"$defined") | awk -v allowed="$allowed" '
			{ owners[$1] = owners[$1] " " $2 }
			END {
				for (s in owners) {
					n = split(owners[s], o, " "); ok = 0
					for (i = 1; i <= n; i++) if (index(allowed, " " o[i] " ")) ok = 1
					if (!ok) print s " (" substr(owners[s], 2) ")"
				}
			}' | sort
}
# A binary's main.o (not in its folder's library) is held to its folder's list.
for d in $layers; do
	for f in "$(libfile "$d")" "$build/obj/$d/main.o"; do
		[ -f "$f" ] || continue
		out=$(calls_out "$d" "$f")
		if [ -z "$out" ]; then
			ok "layer $d: ${f##*/} calls only itself and the libraries it may use"
		else
			bad "layer $d" "${f##*/} calls what it may not use: $(tr '\n' ' ' <<<"$out")"
		fi
	done
done

# 5. Self-test of 4: core with one call up (a function of
# runner/container) must be caught.
tmp=$(mktemp -d)
top=$(nm -g --defined-only "$(libfile runner/container)" 2>/dev/null | awk '$2 == "T" { print $3; exit }')
if [ -n "$top" ] && printf 'extern void %s(void);\nvoid layers_selftest(void);\nvoid layers_selftest(void) { %s(); }\n' \
		"$top" "$top" | gcc -c -x c -o "$tmp/up.o" - &&
	cp "$(libfile core)" "$tmp/libcore.a" && ar rs "$tmp/libcore.a" "$tmp/up.o" 2>/dev/null &&
	[[ $(calls_out core "$tmp/libcore.a") == *"$top (runner/container)"* ]]; then
	ok "an upward call ($top from core) is caught"
else
	bad "an upward call is caught" "core calling ${top:-a runner/container function} went unnoticed"
fi
rm -rf "$tmp"

echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
