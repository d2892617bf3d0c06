#!/bin/bash
# The options nothing else exercises, each by what a user sees: --help and
# --version, --workdir, --entrypoint (enroot runs the image's rc, oci
# refuses it with a way out), --kill-timeout (the grace a worker gets
# after SIGTERM), `ctrun env` from a batch script, --dry-run's shell
# quoting read back by a shell, and `ctrun hooks install|uninstall oci`
# with --dir and --system.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
cd "$TMPD"

usage_help() {
	run_rc "$CTRUN" --help > help.txt 2> err.txt
	assert_eq 0 "$rc" "--help exit status"
	grep -q '^Usage: ctrun \[OPTIONS\] \[--\] COMMAND' help.txt || fail "--help: no usage line"
	grep -q -- '--kill-timeout SEC' help.txt || fail "--help does not list --kill-timeout"
	[ ! -s err.txt ] || fail "--help wrote to stderr: $(cat err.txt)"
	[ "$(wc -l < help.txt)" -le 24 ] || fail "--help is $(wc -l < help.txt) lines: more than a screen"
	[ "$(wc -L < help.txt)" -le 100 ] || fail "--help has lines wider than 100 columns"
}
behaviour "--help: the usage on stdout, a screen at most" usage_help
# Each subcommand answers --help with its own usage (global options before the word too).
subcommand_help() {
	for sub in env shell check bench; do
		run_rc "$CTRUN" "$sub" --help > help.txt
		assert_eq 0 "$rc" "ctrun $sub --help"
		grep -q "^Usage: ctrun \[OPTIONS\] $sub" help.txt || fail "ctrun $sub --help: $(head -2 help.txt)"
	done
	for sub in cache hooks; do
		"$CTRUN" "$sub" --help | grep -qi "^usage: ctrun $sub" || fail "ctrun $sub --help"
	done
}
behaviour "each subcommand answers --help with its own usage" subcommand_help
# The build's git describe (a tag, or the commit, -dirty for local changes),
# then what was found of the parts loaded or run at run time.
version_lines() {
	"$CTRUN" --version > version.txt
	head -1 version.txt | grep -qxE 'ctrun [0-9A-Za-z.+_-]+' || fail "--version: $(cat version.txt)"
	grep -qE "^  runc +$(command -v runc)\$" version.txt || fail "--version names no runc: $(cat version.txt)"
	grep -qE '^  libarchive +loaded' version.txt || fail "--version: libarchive: $(cat version.txt)"
	want="not found on PATH" && command -v crun > /dev/null && want=$(command -v crun)
	grep -qxE "  crun +$want" version.txt || fail "--version: crun: $(cat version.txt)"
	# An apptainer/singularity is named with its release, read from its answer.
	mkdir -p fakebin
	printf '#!/bin/sh\n[ "$1" = --version ] && echo "singularity-ce version 4.1.0-jammy"\n' > fakebin/singularity
	chmod +x fakebin/singularity
	PATH="$TMPD/fakebin:$PATH" "$CTRUN" --version > version.txt
	grep -qx "  singularity   $TMPD/fakebin/singularity (SingularityCE 4.1.0)" version.txt ||
		fail "--version: singularity: $(cat version.txt)"
}
behaviour "--version: the build, then the parts found at run time" version_lines

workdir() {
	assert_eq /opt "$("$CTRUN" -q --no-prefix --image "$BB" --workdir /opt -- pwd)" "pwd with --workdir /opt"
	assert_eq "$TMPD" "$("$CTRUN" -q --no-prefix --image "$BB" -- pwd)" "pwd without --workdir (the mounted cwd)"
	run_rc "$CTRUN" -q --image "$BB" --workdir opt -- pwd 2> err.txt
	assert_eq 2 "$rc" "relative --workdir"
	grep -q -- "--workdir opt: must be an absolute path" err.txt || fail "--workdir message: $(cat err.txt)"
}
behaviour "--workdir: the container starts there; a relative one is refused" workdir

need_image BBDOCKER busybox-docker.tar
entrypoint() {
	stubs="$CTRUN_REPO/tests/integration/stubs"
	mkdir -p data
	PATH="$stubs:$PATH" ENROOT_DATA_PATH=$TMPD/data "$CTRUN" --runtime enroot --image "$BB" \
		--dry-run -- true > plain.txt
	PATH="$stubs:$PATH" ENROOT_DATA_PATH=$TMPD/data "$CTRUN" --runtime enroot --entrypoint \
		--image "$BB" --dry-run -- true > entry.txt
	PATH="$stubs:$PATH" ENROOT_DATA_PATH=$TMPD/data "$CTRUN" --runtime enroot --image "$BB" \
		--dry-run < /dev/null > default.txt
	grep -q '^rc() {$' plain.txt || fail "without --entrypoint the conf does not replace rc()"
	# No command: not enroot's rc but the agent's, alone, else a shell.
	grep -q '^rc() {$' default.txt || fail "with no command the conf does not replace rc()"
	grep -q "^# agent runs, with no arguments, the image's default command: the first found of: /etc/rc; the command above when none is there$" \
		default.txt || fail "with no command the agent does not run the image's rc: $(cat default.txt)"
	# With --entrypoint the agent runs the image's rc (with the worker's environment).
	grep -q "^# agent runs each command through the first entrypoint found of: /etc/rc$" entry.txt ||
		fail "with --entrypoint the agent does not run the image's rc"
	# An image whose /etc/rc (enroot's form: no #!, not executable) runs the command.
	cp -a "$(dirname "$BB")/busybox-rootfs" rcimg
	printf 'exec /bin/echo "from rc:" "$@"\n' > rcimg/etc/rc
	assert_eq "from rc: a  b" "$("$CTRUN" -q --entrypoint --image rcimg -- 'a  b')" "--entrypoint with oci"
	assert_eq "a  b" "$("$CTRUN" -q --image rcimg -- echo 'a  b')" "without --entrypoint"
	# No command: the image's default (its rc with no arguments), like docker run.
	assert_eq "from rc:" "$("$CTRUN" -q --image rcimg < /dev/null)" "ctrun --image IMG, no command"
	# A docker archive's Entrypoint/Cmd become /etc/rc when it is unpacked (Cmd /bin/sh here).
	assert_eq "hi" "$(CTRUN_CACHE_DIR=$TMPD/cc "$CTRUN" -q --entrypoint --image "$BBDOCKER" -- echo hi)" \
		"--entrypoint with a docker archive"
	assert_eq "from stdin" "$(echo 'echo from stdin' | CTRUN_CACHE_DIR=$TMPD/cc "$CTRUN" -q --image "$BBDOCKER")" \
		"a docker archive's Cmd with no command"
	run_rc "$CTRUN" -q --entrypoint --image "$BB" -- true 2> err.txt
	assert_eq 125 "$rc" "--entrypoint on an image without one"
	grep -q -- "--entrypoint: the image has no entrypoint on .*(looked for /etc/rc, /.singularity.d/runscript)" \
		err.txt || fail "--entrypoint message: $(cat err.txt)"
}
behaviour "--entrypoint: the agent runs the image's /etc/rc (enroot and oci)" entrypoint

kill_timeout() {
	cat > slow.sh <<'W'
#!/bin/bash
if [ "$RANK" = 0 ]; then
	until [ -e "$OUT/ready" ]; do sleep 0.01; done
	exit 3
fi
trap 'sleep 1; echo "cleanup done" > "$OUT/cleaned"; exit 0' TERM
touch "$OUT/ready"
while :; do sleep 0.05; done
W
	chmod +x slow.sh
	run_rc env OUT="$TMPD" "$CTRUN" -q --nproc-per-node 2 --kill-timeout 10 -- ./slow.sh
	assert_eq 3 "$rc" "status of the failing rank"
	[ -e cleaned ] || fail "--kill-timeout 10: the worker's 1 s cleanup was cut off"
	rm -f cleaned ready
	run_rc env OUT="$TMPD" "$CTRUN" -q --nproc-per-node 2 --kill-timeout 0 -- ./slow.sh
	assert_eq 3 "$rc" "status of the failing rank (grace 0)"
	[ ! -e cleaned ] || fail "--kill-timeout 0: the worker was not killed at once"
}
behaviour "--kill-timeout: a worker's cleanup after SIGTERM fits the grace, or is cut off" kill_timeout
behaviour "no slow.sh worker is left" assert_no_leftovers slow.sh 5

batch_env() {
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/env.out" --wrap "$CTRUN env --nproc-per-node 2"
	cat env.out
	assert_eq 0 "$rc" "sbatch of ctrun env"
	assert_eq "0 1 2 3" "$(sed -n 's/^RANK=//p' env.out | sort -n | xargs)" "ranks printed by the two nodes"
}
behaviour "ctrun env from a batch script: each node's workers" batch_env

dry_run() {
	words=("a b" "it's" '$HOME' '`id`' "tab	x" 'back\slash' "*")
	"$CTRUN" -q --dry-run -- printf '[%s]\n' "${words[@]}" > plan.txt
	line=$(grep '^env ' plan.txt)
	assert_eq "$(printf '[%s]\n' "${words[@]}")" "$(bash -c "$line")" "dry-run line run by bash"
}
behaviour "--dry-run: the printed command line, run by a shell, gives the same words" dry_run

hooks_oci() {
	"$CTRUN" hooks install oci --dir "$TMPD/hooks.d" > inst.txt
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hook"]["args"] == ["ctrun-hook", "createContainer"], d
assert d["stages"] == ["createContainer"], d' hooks.d/ctrun-hook.json ||
		fail "hooks.d JSON: $(cat hooks.d/ctrun-hook.json)"
	"$CTRUN" hooks uninstall oci --dir "$TMPD/hooks.d"
	[ ! -e hooks.d/ctrun-hook.json ] || fail "uninstall left the file"
	mkdir share
	unshare -m --propagation private sh -c '
		mount --bind "$1/share" /usr/share
		"$2" hooks install oci --system && test -f /usr/share/containers/oci/hooks.d/ctrun-hook.json &&
		"$2" hooks uninstall oci --system && test ! -e /usr/share/containers/oci/hooks.d/ctrun-hook.json
	' sh "$TMPD" "$CTRUN" || fail "hooks install/uninstall oci --system"
	[ ! -e /usr/share/containers/oci/hooks.d/ctrun-hook.json ] || fail "--system wrote the machine's /usr/share"
}
behaviour "hooks install|uninstall oci: --dir, and --system in a private /usr/share" hooks_oci

# --timings: one line with each start-up phase, here and in a container.
need_image TBB busybox.sqsh
timings_local() {
	"$CTRUN" --timings -- true 2> t.err
	grep -Eq "^ctrun: timings on $(hostname -s): exec [0-9.]+ ms, options [0-9.]+ ms, topology [0-9.]+ ms, setup [0-9.]+ ms, workers [0-9.]+ ms; total [0-9.]+ ms$" t.err ||
		fail "--timings: $(cat t.err)"
	"$CTRUN" --timings --image-mode mount --image "$TBB" -- true 2> t.err
	grep -Eq "image \(mounted\) [0-9.]+ ms, setup [0-9.]+ ms, container start [0-9.]+ ms, workers" t.err ||
		fail "--timings in a container: $(cat t.err)"
}
behaviour "--timings: one line with each start-up phase, here and in a container" timings_local
# Several nodes (tasks): each prints its own line, rank 0 one more with the
# slowest node of each phase, gathered over UDP from the others.
n1=${NODES[0]} n2=${NODES[1]}
timings_nodes() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" --timings -- true 2> t.err
	assert_eq 2 "$(grep -c '^ctrun: timings on ' t.err)" "per-node timings lines"
	assert_eq 1 "$(grep -c '^ctrun: timings, slowest of 2 nodes: ' t.err)" "summary lines: $(cat t.err)"
	grep -Eq "^ctrun: timings, slowest of 2 nodes: exec [0-9.]+ ms \(($n1|$n2)\), .*workers [0-9.]+ ms \(($n1|$n2)\); total [0-9.]+ ms \(($n1|$n2)\)$" t.err ||
		fail "--timings summary: $(cat t.err)"
	# The slowest total is the larger of the two nodes' own totals.
	want=$(sed -n 's/^ctrun: timings on .*; total \([0-9.]*\) ms$/\1/p' t.err | sort -n | tail -1)
	grep -Eq "; total $want ms \(($n1|$n2)\)\$" t.err || fail "summary total is not the slowest ($want): $(cat t.err)"
	srun -N1 -n2 -w "$n1" "$CTRUN" --timings -- true 2> t.err
	grep -q '^ctrun: timings, slowest of 2 tasks: ' t.err || fail "task-mode summary: $(cat t.err)"
}
behaviour "--timings on several nodes (tasks): a line each, rank 0 one more with the slowest" timings_nodes
# Staging is a phase like the others: a batch script's ctrun --stage sbcast
# --timings prints its own line (the private directories made on every
# node, then the copy), and the first node's summary starts with them.
timings_staged() {
	cp "$TBB" bb.sqsh
	cat > timings.sh <<J
#!/bin/bash
export CTRUN_CACHE_STAGE_DIR=$CTRUN_CLUSTER_SCRATCH
"$CTRUN" --timings --stage sbcast --image "$TMPD/bb.sqsh" --nproc-per-node 1 -- true
J
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/timings.out" timings.sh
	cat timings.out
	assert_eq 0 "$rc" "the staged job with --timings"
	grep -Eq "^ctrun: timings on $n1 \(batch script\): exec [0-9.]+ ms, options [0-9.]+ ms, topology [0-9.]+ ms, stage \(prepare\) [0-9.]+ ms, stage \(sbcast\) [0-9.]+ ms, steps [0-9.]+ ms; total [0-9.]+ ms$" timings.out ||
		fail "--timings in a batch script: no staging times"
	grep -Eq "^ctrun: timings, slowest of 2 nodes: stage \(prepare\) [0-9.]+ ms \($n1 batch script\), stage \(sbcast\) [0-9.]+ ms \($n1 batch script\), exec [0-9.]+ ms \(($n1|$n2)\), .*; total [0-9.]+ ms \(($n1|$n2)\)$" timings.out ||
		fail "--timings summary of a staged batch job: no staging times"
	# The staging the summary shows is the one the batch script measured.
	for p in prepare sbcast; do
		assert_eq "$(sed -n "s/^ctrun: timings on .*(batch script):.* stage ($p) \([0-9.]*\) ms.*/\1/p" timings.out)" \
			"$(sed -n "s/^ctrun: timings, slowest.* stage ($p) \([0-9.]*\) ms.*/\1/p" timings.out)" \
			"stage ($p) in the summary and in the batch script's line"
	done
}
behaviour "--timings with --stage sbcast in a batch script: the staging phases, in the summary too" timings_staged
