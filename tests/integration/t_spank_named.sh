#!/bin/bash
# tag: every-slurm
# --container-name through the SPANK plugin (pyxis's tests/name.bats,
# exec.bats and concurrency.bats): a named container keeps its changes on
# the node and is used again with or without --container-image, an
# unnamed one keeps nothing; NAME:create refuses one that exists,
# NAME:exec one that is not running; a step joins another step's running
# container (named, or unnamed by JOB.STEP), ignoring its
# --container-mounts; 50 steps over 5 named containers with :no_exec run
# at once, each a new container over its name's one root; nothing is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image BBDIR busybox-rootfs
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
node=${NODES[0]}
on_node() { as_user srun -N1 -w "$node" "$@"; }
# The test user's kept containers go with the file, and the image's unpacked
# entry they made (a later test's plain steps would run over it, not a mount).
run_mode=$(stat -c %a /run)
trap 'chmod "$run_mode" /run; for n in spank-nt spank-run spank-rec spank-wd spank-un spank-un2 spank-c0 spank-c1 spank-c2 spank-env spank-env2 \
	concurrent-test-{0..4} "$BB" "$TMPD/wd.sqsh"; do
	as_user "$CTRUN" cache remove "$n" > /dev/null 2>&1; done; spank_cluster_down' EXIT

persistence() {
	on_node --container-image="$BB" --container-name=spank-nt sh -c 'echo kept > /kept'
	assert_eq kept "$(on_node --container-image="$BB" --container-name=spank-nt cat /kept)" \
		"the named container, with its image"
	assert_eq kept "$(on_node --container-name=spank-nt cat /kept)" "the named container alone"
	on_node --container-image="$BB" sh -c '! test -e /kept' || fail "an unnamed container kept /kept"
}
behaviour "a named container keeps its changes" persistence

# pyxis's env_vars.bats: PYXIS_CONTAINER_NAME, and the command line over it.
name_var() {
	PYXIS_CONTAINER_NAME=spank-env on_node --container-image="$BB" sh -c 'echo env > /e'
	assert_eq env "$(on_node --container-name=spank-env cat /e)" "PYXIS_CONTAINER_NAME"
	PYXIS_CONTAINER_NAME=spank-env on_node --container-image="$BB" --container-name=spank-env2 \
		sh -c 'echo cli > /e2'
	assert_eq cli "$(on_node --container-name=spank-env2 cat /e2)" "--container-name over the variable"
	on_node --container-name=spank-env sh -c '! test -e /e2' ||
		fail "PYXIS_CONTAINER_NAME's container got the command line's file"
}
behaviour "PYXIS_CONTAINER_NAME" name_var

flags() {
	run_rc on_node --container-name=spank-nt:create true 2> err
	[ "$rc" -ne 0 ] && grep -q "spank-nt:create: a container spank-nt exists" err ||
		fail "NAME:create of one that exists: $rc $(cat err)"
	run_rc on_node --container-name=spank-nt:exec true 2> err
	[ "$rc" -ne 0 ] && grep -q "spank-nt:exec: the container is not running" err ||
		fail "NAME:exec of one that is not running: $rc $(cat err)"
	run_rc on_node --container-name=spank-none true 2> err
	[ "$rc" -ne 0 ] && grep -q "there is no container spank-none on $node" err ||
		fail "a name that does not exist, without an image: $rc $(cat err)"
}
behaviour "NAME:create, NAME:exec, a name that is not there" flags

# Step A holds a running container until $TMPD/$1.done appears; it writes
# its mount namespace and JOB.STEP to $TMPD/$1.a first.
hold_a() { # tag, then srun options
	local tag=$1
	shift
	on_node --container-mounts="$TMPD" "$@" sh -c "echo created > /by-a 2>/dev/null; echo \$(readlink /proc/self/ns/mnt) \
		\$SLURM_JOB_ID.\$SLURM_STEP_ID > $TMPD/$tag.a; \
		while [ ! -e $TMPD/$tag.done ]; do sleep 0.1; done" &
	wait_lines "$TMPD/$tag.a" 1 60 || fail "step A did not start"
}
attach_named() {
	hold_a run --container-image="$BB" --container-name=spank-run
	read -r ns _ < run.a
	out=$(on_node --container-name=spank-run --container-mounts=/tmp:/mnt/x sh -c \
		'readlink /proc/self/ns/mnt; cat /by-a; test ! -e /mnt/x && echo no-mount' 2> err)
	touch run.done
	wait
	assert_eq "$ns;created;no-mount;" "$(tr '\n' ';' <<<"$out")" "step B in step A's container"
	grep -q "ignoring --container-mounts when attaching to a running container" err ||
		fail "no note on the ignored mounts: $(cat err)"
}
behaviour "a step joins another step's running named container" attach_named

# pyxis's exec.bats: a joining step does not start where the holding
# step's process went (cd /tmp); it starts in the container's working
# directory: the image's (pyxis's rule, default_workdir=image).
attach_workdir() {
	local wd
	mkdir -p other wdimg/workspace && chmod 777 other
	cp -a "$BBDIR/." wdimg/
	printf 'cd "/workspace" && unset OLDPWD || exit 1\n' > wdimg/etc/rc
	mksquashfs wdimg wd.sqsh -noappend -quiet -no-progress > /dev/null && chmod 644 wd.sqsh
	on_node --container-mounts="$TMPD" --container-image="$TMPD/wd.sqsh" --container-name=spank-wd \
		sh -c "cd /tmp && echo \$(pwd) > $TMPD/wd.a; while [ ! -e $TMPD/wd.done ]; do sleep 0.1; done" &
	wait_lines "$TMPD/wd.a" 1 60 || fail "step A did not start"
	wd=$(as_user srun -N1 -w "$node" --chdir="$TMPD/other" --container-name=spank-wd pwd)
	touch wd.done
	wait
	assert_eq "/tmp" "$(cat wd.a)" "step A's own directory"
	assert_eq "/workspace" "$wd" "the joining step's working directory: the image's"
}
behaviour "a step joining a running container starts in the image's directory" attach_workdir

# pyxis's unshare tests: a step that asks for a namespace of its own and
# joins a running container that has none is refused, naming it; one
# whose container has it joins.
attach_unshare() {
	local ns
	hold_a un --container-image="$BB" --container-name=spank-un
	for ns in ipc:IPC net:network uts:UTS; do
		run_rc on_node --container-name=spank-un --container-unshare="${ns%%:*}" true 2> err
		assert_eq 125 "$rc" "--container-unshare=${ns%%:*} joining a container without it: status"
		grep -q -- "--container-unshare=${ns%%:*} requested but the container is not in a separate ${ns#*:} namespace" err ||
			fail "--container-unshare=${ns%%:*}: no line naming it: $(cat err)"
	done
	touch un.done
	wait
	hold_a un2 --container-image="$BB" --container-name=spank-un2 --container-unshare=ipc
	out=$(on_node --container-name=spank-un2 --container-unshare=ipc readlink /proc/self/ns/ipc)
	touch un2.done
	wait
	[ "$out" != "$(readlink /proc/self/ns/ipc)" ] || fail "the joining step is in the host's IPC namespace"
}
behaviour "joining a running container without a namespace the step asked for is refused" attach_unshare

attach_unnamed() {
	hold_a anon --container-image="$BB"
	read -r ns jobstep < anon.a
	out=$(on_node --container-name="$jobstep" readlink /proc/self/ns/mnt)
	touch anon.done
	wait
	assert_eq "$ns" "$out" "step B in the unnamed container $jobstep"
}
behaviour "a step joins a running unnamed container as JOB.STEP" attach_unnamed

# pyxis's concurrency.bats: named containers created by steps at once.
concurrent_names() {
	local pids=() i
	for i in 0 1 2; do
		on_node --container-image="$BB" --container-name=spank-c$i sh -c "echo $i > /c" &
		pids+=($!)
	done
	for i in 0 1 2; do wait "${pids[$i]}" || fail "step $i of three at once failed"; done
	for i in 0 1 2; do
		assert_eq "$i" "$(on_node --container-name=spank-c$i cat /c)" "spank-c$i kept its file"
	done
}
behaviour "three named containers created at once" concurrent_names

# pyxis's concurrency.bats, "concurrent container reuse" (enroot#126): five
# named containers made, then 50 steps over them started at once in one
# allocation, `--container-name=concurrent-test-$((i % 5)):no_exec` (each
# a new container of that name, never joining another step's).  Each step
# appends its number to /steps and waits until the ten steps of its name
# have: they run at the same time whatever the machine's speed, and each
# sees the others' writes while they run (one root per name).  All exit 0,
# each with its own --container-mounts in a mount namespace of its own (a
# new container, not another step's), and each name keeps its ten numbers
# after they end.
concurrent_reuse() {
	local i k want
	for i in 0 1 2 3 4; do
		on_node --container-image="$BB" --container-name=concurrent-test-$i true ||
			fail "making concurrent-test-$i"
	done
	# Each step its own bind (its number at /own/id).
	for i in $(seq 1 50); do mkdir -p "own-$i" && echo "$i" > "own-$i/id"; done
	cat > conc.sh <<'EOF'
pids=()
for i in $(seq 1 50); do
	srun -n1 --overlap --container-name=concurrent-test-$((i % 5)):no_exec \
		--container-mounts="$PWD/own-$i:/own:ro" sh -c "echo $i >> /steps
n=0; while [ \$(wc -l < /steps) -lt 10 ] && [ \$n -lt 3000 ]; do sleep 0.1; n=\$((n + 1)); done
[ \$(wc -l < /steps) -eq 10 ] && cat /own/id && readlink /proc/self/ns/mnt" > "step-$i.out" 2>&1 &
	pids+=($!)
done
rc=0
for i in $(seq 1 50); do
	wait "${pids[$((i - 1))]}" || { echo "step $i exited $?: $(cat "step-$i.out")"; rc=1; }
done
exit $rc
EOF
	run_rc as_user salloc -N1 -w "$node" bash "$TMPD/conc.sh" > conc.out 2>&1
	assert_eq 0 "$rc" "50 steps over 5 named containers with :no_exec: $(grep -v '^salloc:' conc.out | head -20)"
	for i in $(seq 1 50); do
		assert_eq "$i" "$(grep -x '[0-9]*' "step-$i.out")" "step $i's own --container-mounts"
	done
	for k in 0 1 2 3 4; do
		want=$(seq 1 50 | awk -v k=$k '$1 % 5 == k' | tr '\n' ' ')
		# A container of its own for each (none joined another step's):
		# the ten of a name were alive at once, so their namespaces differ.
		assert_eq 10 "$(for i in $want; do grep '^mnt:\[' "step-$i.out"; done |
			sort -u | wc -l)" "distinct mount namespaces of concurrent-test-$k's ten steps"
		assert_eq "$want" "$(on_node --container-name=concurrent-test-$k sort -n /steps | tr '\n' ' ')" \
			"the steps' numbers kept in concurrent-test-$k"
	done
}
behaviour "pyxis's concurrency.bats: 50 steps over 5 named containers with :no_exec at once" concurrent_reuse

# The node's records of running containers (issue 41): root's, in a
# directory the job's user can neither read nor write (a user could fill
# /run, and leave files after the job); /run's own mode never changed; a
# record left by a step that died goes at the node's next step.
records() {
	local dir=/run/ctrun-spank/$node/$(id -u "$SPANK_USER")
	# A mode of /run's that a plugin must not "fix" (the file's EXIT trap
	# puts the machine's back whatever happens).
	chmod 0711 /run
	echo stale > /tmp/ctrun-stale-record
	hold_a rec --container-image="$BB" --container-name=spank-rec
	assert_eq "0 0 600" "$(stat -c '%u %g %a' "$dir/spank-rec")" "the record: root's, 0600"
	assert_eq "0 700" "$(stat -c '%u %a' "$dir")" "the user's directory: root's, 0700"
	as_user sh -c "ls '$dir'" > /dev/null 2>&1 && fail "the job's user can list the records"
	as_user sh -c "echo x > '$dir/planted'" 2> /dev/null && fail "the job's user can write a record"
	touch rec.done
	wait
	assert_eq 711 "$(stat -c %a /run)" "/run's mode"
	# A record of a step that died (no lock held), then the node's next step.
	cp /tmp/ctrun-stale-record "$dir/spank-dead" && rm -f /tmp/ctrun-stale-record
	on_node --container-image="$BB" true
	[ ! -e "$dir/spank-dead" ] || fail "a stale record outlived the node's next step"
	chmod "$run_mode" /run
}
behaviour "the records of running containers are root's, /run untouched, stale ones removed" records

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_rundirs
	local left
	left=$(ls "/run/ctrun-spank/$node/$(id -u "$SPANK_USER")" 2>/dev/null || true)
	[ -z "$left" ] || fail "records of running containers left: $left"
	# The named containers' doors (their runs' sockets), and any mount of
	# their one root in any process of the machine or its nodes.
	left=$(ls "/tmp/ctrun-cache-$(id -u "$SPANK_USER")/locks/" 2>/dev/null | grep '\.sock$' || true)
	[ -z "$left" ] || fail "doors of named containers left: $left"
	left=$(grep -l ' ctrun-named:' /proc/[0-9]*/mountinfo 2>/dev/null || true)
	[ -z "$left" ] || fail "a named container's root still mounted: $left"
}
behaviour "nothing is left" nothing_left
