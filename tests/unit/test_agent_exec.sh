#!/bin/bash
# Unit test of ctrun-agent's exec mode (`--exec SPEC`, what `ctrun shell` and
# `ctrun --image IMG` with no command run inside the container) with its
# entrypoint candidates (spec Y) and F (they are the image's default
# command): the real agent binary on specs written here, no container.
# The first candidate found runs alone with F, through /bin/sh without #!;
# with none found F runs the argv (a shell) and keeps its exit status; without
# F a missing entrypoint is one line, exit 125, and the argv goes after it.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
cd "$(dirname "$0")/../.."
agent=${CTRUN_BUILD:-build}/ctrun-agent
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
d=$(mktemp -d /tmp/ctrun-test-agent-exec.XXXXXX)
trap 'rm -rf "$d"' EXIT

rec() { printf '%s%d:%s\n' "$1" "${#2}" "$2"; } # ASCII values only
# spec FILE DEFAULT(0|1) ENTRIES... -- ARGV...
spec() {
	local f=$1 def=$2
	shift 2
	{
		rec V 1
		rec H node1
		while [ "$1" != -- ]; do rec Y "$1"; shift; done
		shift
		[ "$def" = 0 ] || rec F 1
		rec W 0
		rec R 0
		for a in "$@"; do rec A "$a"; done
		rec S K=v
		rec Z ''
	} > "$d/$f"
}
# check WHAT WANT_RC WANT_OUT SPEC
check() {
	local out rc
	out=$("$agent" --exec "$d/$4" 2>&1)
	rc=$?
	if [ "$rc" != "$2" ]; then
		bad "$1" "exit $rc, not $2 ($out)"
	elif [ "$out" != "$3" ]; then
		bad "$1" "printed '$out', not '$3'"
	else
		ok "$1"
	fi
}

printf 'echo "rc ran with $# arguments, K=$K"\n' > "$d/rc"  # enroot's form: no #!, not executable
printf '#!/bin/sh\necho "runscript ran with $# arguments"\nexit 3\n' > "$d/runscript"
chmod 755 "$d/runscript"
spec a 1 "$d/missing" "$d/rc" -- /bin/sh -c 'echo shell'
check "F: the first candidate found runs alone, through /bin/sh without #!" 0 \
	"rc ran with 0 arguments, K=v" a
spec b 1 "$d/runscript" "$d/rc" -- /bin/sh -c 'echo shell'
check "F: the runscript before the rc, executed, its exit status the agent's" 3 \
	"runscript ran with 0 arguments" b
spec c 1 "$d/missing" "$d/dir" -- /bin/sh -c 'echo "shell K=$K"; exit 7'
mkdir "$d/dir"
check "F: no candidate is no error: the argv (a shell) runs, its exit status kept" 7 "shell K=v" c
spec e 0 "$d/missing" -- /bin/sh -c 'echo shell'
check "without F a missing entrypoint is one line, exit 125" 125 \
	"ctrun: --entrypoint: the image has no entrypoint on node1 (looked for $d/missing); run without --entrypoint" e
spec f 0 "$d/rc" -- /bin/echo x y
check "without F the argv goes to the entrypoint" 0 "rc ran with 3 arguments, K=v" f
printf 'V1:1\nH1:h\nF1:1\nW1:0\nA7:/bin/sh\nZ0:\n' > "$d/g"
"$agent" --exec "$d/g" < /dev/null > /dev/null 2>&1 && ok "F without candidates: the argv" ||
	bad "F without candidates: the argv" "exit $?"

# The SPANK plugin's hold (argv: the agent --hold) with an entrypoint, as
# pyxis runs enroot's: the entrypoint starts from the container's own
# environment (here the agent's: IMGV, and PATH) and T/--env's, not the
# host's inherited I; the hold then reports the whole environment with the
# entrypoint's changes over it (holdmsg.h: the message after its first line).
{
	rec V 1
	rec H node1
	rec I HOSTV=host
	rec I CHANGED=host
	rec I GONE=host
	rec T NAMED=named
	rec Y "$d/eprc"
	rec W 0
	rec R 0
	rec A "$agent"
	rec A --hold
	rec Z ''
} > "$d/h"
printf 'echo "entry: ${HOSTV:-none} ${NAMED:-none} ${IMGV:-none} ${GONE:-none}"\nexport EPV=ep\nexport IMGV=changed\nunset DROPV\nexec "$@"\n' > "$d/eprc"
out=$(env -i PATH=/usr/bin:/bin IMGV=image DROPV=image GONE=image "$agent" --exec "$d/h" < /dev/null 2> "$d/h.err" | tr '\0' '\n')
envs=$(sed -n '/^ctrun-hold 1 /,$p' <<<"$out" | sed '1,2d' | grep -E '^(HOSTV|NAMED|IMGV|EPV|DROPV|GONE|CTRUN_HOLD_BASE)=' | sort | tr '\n' ' ')
if [ "$(head -1 <<<"$out")" != "entry: none named image image" ]; then
	bad "the hold's entrypoint starts from the container's environment" "$(head -1 <<<"$out") $(cat "$d/h.err")"
elif [ "$envs" != "EPV=ep GONE=image HOSTV=host IMGV=changed NAMED=named " ]; then
	bad "the hold reports its environment with the entrypoint's changes" "'$envs' $(cat "$d/h.err")"
else
	ok "the hold's entrypoint starts from the container's environment, its changes over the hold's"
fi

if [ "$failed" -eq 0 ]; then
	echo "[  PASSED  ] $passed test(s)."
else
	echo "[  FAILED  ] $failed test(s)."
	exit 1
fi
