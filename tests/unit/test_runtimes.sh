#!/bin/bash
# Unit test of the runtime names against the driver table (core/runtimes.h,
# CTR_DRIVERS): adding a runtime is its folder and one line there.
#   - each driver of the list is defined once, in its folder of rt/, under
#     its own name;
#   - the built ctrun's --runtime choices and --help (made from the list)
#     and the places that cannot read it (the shell completion, the
#     documents) name the same runtimes, in the same order, plus "auto";
#   - docs/containers.md has a row for each; docs/slurm.md and the SPANK
#     plugin's --container-runtime help name them too;
#   - no code of runner/container/ outside a driver's folder names a
#     driver: no identifier has a runtime's name as a part (comments and
#     strings, which say what the code does, aside), so the core asks the
#     driver table and never which runtime it is.
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
ctrun=${CTRUN_BUILD:-build}/ctrun
table=$(sed -n '/^#define CTR_DRIVERS(X)/,/^$/p' core/runtimes.h | grep -o 'X([a-z0-9_]*)' | sed 's/X(\(.*\))/\1/')
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
same "--runtime's choices" \
	"$("$ctrun" --runtime not-a-runtime 2>&1 | sed -n 's/.*(use one of: \(.*\))$/\1/p' | tr -d ',')" "$want"
same "bash completion" \
	"$(sed -n 's/.*--runtime) COMPREPLY=($(compgen -W "\([^"]*\)".*/\1/p' completions/ctrun.bash)" "$want"
same "configs/ctrun.ini" \
	"$(grep -B1 '^;runtime = ' configs/ctrun.ini | head -1 | sed 's/^; //; s/ | / /g')" "$want"
same "ctrun(1)" "$(sed -n 's/^\*--runtime\* \([a-z|]*\)$/\1/p' docs/man/ctrun.1.scd | tr '|' ' ')" "$want"
same "--help" "$("$ctrun" --help | grep -o -- '--runtime [a-z|]*' | head -1 | sed 's/--runtime //' | tr '|' ' ')" "$want"
same "docs/cli.md" "$(grep -o -- '--runtime [a-z|]*' docs/cli.md | head -1 | sed 's/--runtime //' | tr '|' ' ')" "$want"
same "docs/slurm.md (--container-runtime)" \
	"$(sed -n 's/^| `--container-runtime=NAME` | .* | ctrun.s own: \([a-z, ]*\) |$/\1/p' docs/slurm.md | tr -d ',')" "$want"
# The SPANK plugin's --container-runtime help, where it is built.
so=${CTRUN_BUILD:-build}/spank_ctrun.so
[ ! -e "$so" ] || same "the SPANK plugin's --container-runtime help" \
	"$(strings "$so" | sed -n 's/^\[ctrun\] the container runtime (ctrun --runtime): \(.*\)$/\1/p' | tr -d ',')" "$want"

missing=""
for d in $want; do
	grep -q "^| \`$d\`\|^| \`[a-z]*\`, \`$d\`" docs/containers.md || missing+=" $d"
done
[ -z "$missing" ] && ok "docs/containers.md has a row for each runtime" ||
	bad "docs/containers.md has a row for each runtime" "$missing"

# Identifiers of C code with comments, strings and character constants
# taken out: FILE:LINE: NAME for each that has a driver's name as a part
# (split at '_', any case).  Allowed: the folder that defines the driver
# (oci/ defines oci and crun, apptainer/ apptainer and singularity), and
# IMAGE_OCI_ARCHIVE (an image format, images/kind.h) and no_oci
# (apptainer's own --no-oci).
names_outside() { # ROOT DRIVERS...
	python3 - "$@" <<'PY'
import os, re, sys
root, drivers = sys.argv[1], sys.argv[2:]
allowed = {"IMAGE_OCI_ARCHIVE", "app_has_no_oci"}
token = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])+\'|[A-Za-z_][A-Za-z0-9_]*|\n', re.S)
owner = {}
for dirpath, _, files in os.walk(os.path.join(root, "rt")):
    for f in files:
        if f.endswith(".c"):
            text = open(os.path.join(dirpath, f)).read()
            for d in drivers:
                if "ctr_driver_%s = {" % d in text:
                    owner[d] = dirpath
for dirpath, _, files in sorted(os.walk(root)):
    for f in sorted(files):
        if not f.endswith((".c", ".h")):
            continue
        path = os.path.join(dirpath, f)
        line = 1
        for m in token.finditer(open(path).read()):
            t = m.group(0)
            line += t.count("\n")
            if not re.match(r'[A-Za-z_]', t) or t in allowed:
                continue
            parts = t.lower().split("_")
            for d in drivers:
                if d in parts and dirpath != owner.get(d):
                    print("%s:%d: %s" % (path, line, t))
PY
}
if [ -z "$(echo $table)" ]; then
	bad "no code outside a driver's folder names a driver" "no driver table"
else
	found=$(names_outside runner/container $table 2>&1)
	[ -z "$found" ] && ok "no code outside a driver's folder names a driver" ||
		bad "no code outside a driver's folder names a driver" "$(echo "$found" | head -5 | tr '\n' ' ')"
fi
# The check itself finds what it is for: an identifier naming enroot in
# the core's code, and one in another driver's folder.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/rt/enroot" "$tmp/rt/oci"
printf 'const struct ctr_driver ctr_driver_enroot = {\n\t.name = "enroot",\n};\nstatic int enroot_data;\n' >"$tmp/rt/enroot/enroot.c"
printf 'const struct ctr_driver ctr_driver_oci = { 0 };\n/* enroot_x in a comment */\nconst char *m = "enroot_y";\nint IMAGE_OCI_ARCHIVE;\n' >"$tmp/rt/oci/oci.c"
printf 'int x;\nif (s->need == ROOT_ENROOT)\n' >"$tmp/setup.c"
printf 'int oci_gpu;\n' >"$tmp/rt/enroot/hook.c"
found=$(names_outside "$tmp" enroot oci | sed "s|$tmp/||")
[ "$found" = "setup.c:2: ROOT_ENROOT
rt/enroot/hook.c:1: oci_gpu" ] && ok "the check finds a driver named outside its folder" ||
	bad "the check finds a driver named outside its folder" "found '$found'"

echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
