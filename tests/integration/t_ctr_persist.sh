#!/bin/bash
# Writable runs (issue 24): --writable makes the container's root writable
# for the run and its changes are gone in the next; without it the root is
# read-only.  OCI (runc) and charliecloud over ctrun's overlay (tmpfs upper
# layer), a real enroot (/opt/enroot: `enroot start --rw` of the squashfs,
# never of the node's shared container), as root and as the test user,
# through srun on a cluster node.  The real enroot and Singularity
# behaviours ("enroot: ...", "singularity: ...") skip alone on a machine
# without them (tests/skips.allowed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
private_node_cache persist-cache
cd "$TMPD"
cp "$BB" bb.sqsh
chmod 644 bb.sqsh
N=${NODES[0]}
export CTRUN_NV=false

# as root|user CMD...: CMD through srun on node N, in $TMPD, output in $out
# (salloc's own lines left out).
as() {
	local who=$1
	shift
	# AS_LAUNCH: how, instead of srun (e.g. "salloc -N1"); on node N either way.
	local launch=${AS_LAUNCH:-srun -N1}
	if [ "$who" = root ]; then
		run_rc $launch -w "$N" "$@" > run.out 2>&1
	else
		local q
		printf -v q '%q ' "$@"
		run_rc su ctrunuser -s /bin/bash -c "cd '$TMPD' && export SLURM_CONF='$SLURM_CONF' \
CTRUN_NV=false CTRUN_CACHE_DIR='$TMPD/ucache' PATH='$PATH' ENROOT_RUNTIME_PATH='$TMPD/enroot-run-u' \
ENROOT_DATA_PATH='$TMPD/enroot-data-u' ENROOT_CACHE_PATH='$TMPD/enroot-cache-u' && $launch -w '$N' $q" > run.out 2>&1
	fi
	sed -i '/^salloc: /d' run.out
	out=$(cat run.out)
}

# A write under / and under /usr, read back in the same run; the next run
# (also --writable) does not see it; a run without --writable cannot write.
writable_then_gone() { # runtime root|user [ctrun options...]
	local rt=$1 who=$2
	shift 2
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh --writable -- \
		sh -c 'echo probe-$$ > /persist-probe && echo x > /usr/persist-probe && cat /persist-probe /usr/persist-probe'
	assert_eq 0 "$rc" "--writable run ($rt, $who): $out"
	case $out in probe-*x) ;; *) fail "--writable run ($rt, $who) did not read its writes back: $out" ;; esac
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh --writable -- \
		sh -c 'if [ -e /persist-probe ] || [ -e /usr/persist-probe ]; then echo kept; else echo gone; fi'
	assert_eq 0 "$rc" "second --writable run ($rt, $who): $out"
	assert_eq gone "$out" "a write of a --writable run in the next run ($rt, $who)"
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh -- \
		sh -c 'echo y > /persist-probe'
	[ "$rc" -ne 0 ] || fail "a run without --writable wrote to its root ($rt, $who)"
	case $out in *"Read-only file system"*) ;; *) fail "no read-only error ($rt, $who): $out" ;; esac
}

behaviour "OCI (runc) as root: --writable writes are there in the run, gone in the next; read-only without" \
	writable_then_gone oci root
behaviour "OCI (runc) as the test user: the same" writable_then_gone oci user
behaviour "OCI unpacked into the node cache as root: the same, and the cache entry is not written" \
	writable_then_gone oci root --image-mode unpack
behaviour "charliecloud as root: the same" writable_then_gone charliecloud root

# Bad input: --writable without an image is refused, not ignored.
no_image() {
	run_rc "$CTRUN" --writable true > run.out 2>&1
	assert_eq 2 "$rc" "--writable without --image"
	grep -q -- "--writable needs --image" run.out || fail "message: $(cat run.out)"
	[ "$(wc -l < run.out)" -eq 1 ] || fail "more than one line: $(cat run.out)"
}
behaviour "--writable without --image: one line, exit 2" no_image

nothing_left() {
	assert_no_containers
	local n left
	for n in "${NODES[@]}"; do
		left=$("$CLUSTER" exec "$n" sh -c "grep -F ' $TMPD' /proc/mounts; ls -d /tmp/ctrun-0/ctrun-* 2>/dev/null | head -5" || true)
		[ -z "$left" ] || fail "left on $n: $left"
	done
}
behaviour "nothing left behind (containers, mounts, run directories)" nothing_left

# ---- named containers (--name) ----
# A file written under --name is there in the next step of the same job and
# in the next job; an image removed file stays removed.
named_keeps() { # runtime root|user [image]
	local rt=$1 who=$2 img=${3:-bb.sqsh} nm="keep-$1-$2"
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" --image "$img" --name "$nm" -- \
		sh -c 'echo step1 > /usr/kept && rm /bin/vi && echo done'
	assert_eq 0 "$rc" "first --name run ($rt, $who): $out"
	# (enroot create's own notes come first, on stderr)
	assert_eq done "$(printf '%s\n' "$out" | tail -1)" "first --name run ($rt, $who)"
	# Two steps of one job (salloc), then a job of its own.
	if [ "$who" = root ]; then
		run_rc salloc -N1 -w "$N" bash -c "srun '$CTRUN' -q --no-prefix --runtime $rt --image $img \
--name $nm -- sh -c 'cat /usr/kept; echo step2 >> /usr/kept' && srun '$CTRUN' -q --no-prefix \
--runtime $rt --image $img --name $nm -- sh -c 'cat /usr/kept'" > run.out 2>&1
		out=$(grep -v '^salloc:' run.out)
		assert_eq 0 "$rc" "two steps of one job ($rt): $out"
		assert_eq "step1;step1;step2;" "$(printf '%s\n' "$out" | tr '\n' ';')" "steps of one job ($rt)"
	fi
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" --image "$img" --name "$nm" -- \
		sh -c 'cat /usr/kept; if [ -e /bin/vi ]; then echo vi-back; else echo vi-gone; fi'
	assert_eq 0 "$rc" "a later job ($rt, $who): $out"
	case $out in step1*vi-gone) ;; *) fail "a later job did not continue the container ($rt, $who): $out" ;; esac
	# Without --name the image is as it was.
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" --image "$img" -- sh -c 'ls /usr/kept 2>&1; ls /bin/vi'
	case $out in *"No such file"*/bin/vi) ;; *) fail "a run without --name saw the named changes: $out" ;; esac
}
behaviour "OCI --name as root: kept across two steps of a job and across jobs" named_keeps oci root
behaviour "OCI --name as the test user: kept across jobs" named_keeps oci user
behaviour "charliecloud --name as root: kept across two steps and across jobs" named_keeps charliecloud root

# Node mode: the workers of a step share the one container.
named_workers_share() {
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name share --nproc-per-node 2 -- \
		sh -c 'echo $RANK > /rank-$RANK'
	assert_eq 0 "$rc" "two workers: $out"
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name share -- sh -c 'cat /rank-0 /rank-1'
	assert_eq "0;1;" "$(printf '%s\n' "$out" | tr '\n' ';')" "both workers' writes in the kept layer"
}
behaviour "--name in node mode: the step's workers write into one kept layer" named_workers_share

# Many runs of one name at once (issue 40): K runs in one allocation, each
# appending to /runs and waiting until all K have (so they overlap, and
# each sees the others' writes while it runs: one root per name), all exit
# 0, and the file is there for the run after them.  $1: root|user; $2: a
# runtime; $3: "steps" (K srun steps of ctrun) or "tasks" (one step of K
# tasks, task mode: each task its own ctrun and container).
named_at_once() { # root|user runtime steps|tasks
	local who=$1 rt=$2 how=$3 nm="conc-$1-$2-$3" k=4 barrier
	barrier="echo \$SLURM_STEP_ID.\$SLURM_PROCID >> /runs; n=0
while [ \$(wc -l < /runs) -lt $k ] && [ \$n -lt 3000 ]; do sleep 0.1; n=\$((n + 1)); done
wc -l < /runs"
	if [ "$how" = tasks ]; then
		AS_LAUNCH="srun -N1 -n$k" as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" --image bb.sqsh \
			--name "$nm" -- sh -c "$barrier"
	else
		cat > "at-once-$nm.sh" <<EOF
for i in \$(seq 1 $k); do
	srun -n1 --overlap "$CTRUN" -q --no-prefix --runtime $rt --image bb.sqsh --name $nm -- \
		sh -c '$barrier' > "$nm-\$i.out" 2>&1 &
done
rc=0
for i in \$(seq 1 $k); do wait -n || rc=1; done
cat $nm-*.out
exit \$rc
EOF
		AS_LAUNCH="salloc -N1" as "$who" bash "$TMPD/at-once-$nm.sh"
	fi
	assert_eq 0 "$rc" "$k runs of --name $nm at once ($how, $who): $out"
	assert_eq "$k" "$(printf '%s\n' "$out" | grep -cx "$k")" "each run saw the $k runs' writes ($how, $who): $out"
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" --image bb.sqsh --name "$nm" -- sh -c 'wc -l < /runs'
	assert_eq "$k" "$out" "the runs' writes kept after them ($how, $who)"
}
behaviour "--name: 4 runs at once (srun steps) as root share one container" named_at_once root oci steps
behaviour "--name: 4 runs at once (srun steps) as the test user share one container" named_at_once user oci steps
behaviour "--name: 4 tasks of a step (task mode) share one container" named_at_once root oci tasks
behaviour "charliecloud --name: 4 runs at once share one container" named_at_once root charliecloud steps

# While a run uses a name: another run joins it; what needs it alone
# (cache remove, --name-reset, ctrun save) is refused in one line naming
# the run, exit 125, and the name is unchanged.
named_in_use() {
	srun -N1 -w "$N" "$CTRUN" -q --runtime oci --image bb.sqsh --name busy -- \
		sh -c "echo first > /first; echo up; while [ ! -e '$TMPD/busy.done' ]; do sleep 0.1; done" \
		> first.out 2>&1 &
	local pid=$! msgs=() m
	wait_lines first.out 1 60 || fail "the first run did not start: $(cat first.out)"
	# (srun's own "task 0: Exited with exit code 125" line left out)
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name busy -- cat /first
	msgs+=("$rc|$(grep -v '^srun: ' run.out)")
	as root "$CTRUN" cache remove busy
	msgs+=("$rc|$(grep -v '^srun: ' run.out)")
	as root "$CTRUN" -q --runtime oci --image bb.sqsh --name busy --name-reset -- true
	msgs+=("$rc|$(grep -v '^srun: ' run.out)")
	as root "$CTRUN" -q save busy -o "$TMPD/busy.sqsh"
	msgs+=("$rc|$(grep -v '^srun: ' run.out)")
	touch busy.done
	wait "$pid" || fail "the first run: $(cat first.out)"
	assert_eq "0|first" "${msgs[0]}" "a second run of a busy name, at the same time"
	for m in "${msgs[@]:1}"; do
		case $m in
		"125|ctrun: cache remove busy: in use by pid "*"remove it once no run uses it" | \
			"125|ctrun: --name busy: in use by pid "*"need a named container no run uses"*) ;;
		*) fail "not refused naming the run: $m" ;;
		esac
		[ "$(printf '%s\n' "$m" | wc -l)" -eq 1 ] || fail "more than one line: $m"
	done
	[ ! -e busy.sqsh ] || fail "ctrun save wrote busy.sqsh while the name was in use"
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name busy -- cat /first
	assert_eq first "$out" "the container after the refusals"
}
behaviour "--name in use: another run joins it; cache remove, --name-reset and ctrun save are refused" \
	named_in_use

# kill -9 of a run's ctrun while its container runs: the next run of the
# name works (once the killed run's processes are gone), sees its write,
# and nothing is left (runner/container/namedroot.h).
named_killed() {
	local ctrun_pid
	rm -f k9.up k9.pid
	"$CLUSTER" exec "$N" sh -c "CTRUN_CACHE_DIR='$CTRUN_CACHE_DIR' CTRUN_NV=false '$CTRUN' -q \
--runtime oci --image '$TMPD/bb.sqsh' --name k9 -- sh -c 'echo k9 > /k9; echo up > $TMPD/k9.up; \
exec sleep 600' > '$TMPD/k9.out' 2>&1 & echo \$! > '$TMPD/k9.pid'; wait" &
	local bg=$!
	wait_lines k9.up 1 60 || fail "the run to kill did not start: $(cat k9.out)"
	ctrun_pid=$(cat k9.pid)
	"$CLUSTER" exec "$N" kill -9 "$ctrun_pid"
	wait "$bg" 2>/dev/null || true
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name k9 -- cat /k9
	assert_eq 0 "$rc" "a run after kill -9 of the last one: $out"
	assert_eq k9 "$out" "the killed run's write"
	assert_no_containers
	as root sh -c 'ls "$CTRUN_CACHE_DIR/locks" | grep "\.sock$"; grep -l " ctrun-named:" /proc/[0-9]*/mountinfo 2>/dev/null; true'
	assert_eq 0 "$rc" "looking for doors and mounts: $out"
	assert_eq "" "$out" "doors or mounts of the named container left"
}
behaviour "--name: kill -9 of a run's ctrun; the next run works and nothing is left" named_killed

# A name whose image changed is refused; --name-reset starts it anew.
named_image_changed() {
	cp bb.sqsh other.sqsh
	as root "$CTRUN" -q --runtime oci --image other.sqsh --name keep-oci-root -- true
	assert_eq 2 "$rc" "--name with another image: $out"
	case $out in *"--name keep-oci-root was made from $TMPD/bb.sqsh, and $TMPD/other.sqsh is another image"*"--name-reset"*) ;;
	*) fail "message: $out" ;; esac
	as root "$CTRUN" -q --no-prefix --runtime oci --image other.sqsh --name keep-oci-root --name-reset -- \
		sh -c 'if [ -e /usr/kept ]; then echo kept; else echo new; fi'
	assert_eq 0 "$rc" "--name-reset: $out"
	assert_eq new "$out" "the container after --name-reset"
}
behaviour "--name with a changed image: refused saying so; --name-reset starts anew" named_image_changed

bad_names() {
	local nm
	for nm in a/b .. "" "x y" -x "$(printf 'a%.0s' {1..65})"; do
		run_rc "$CTRUN" --runtime oci --image bb.sqsh --name "$nm" -- true > run.out 2>&1
		assert_eq 2 "$rc" "--name '$nm'"
		[ "$(wc -l < run.out)" -eq 1 ] || fail "--name '$nm': more than one line: $(cat run.out)"
		grep -q -- "--name" run.out || fail "--name '$nm': $(cat run.out)"
	done
	run_rc "$CTRUN" --runtime oci --image bb.sqsh --name-reset -- true > run.out 2>&1
	assert_eq 2 "$rc" "--name-reset without --name"
}
behaviour "--name with '/', '..', empty, a space, a leading '-', 65 bytes: one line, exit 2" bad_names

named_list_remove() {
	as root "$CTRUN" cache list
	assert_eq 0 "$rc" "cache list: $out"
	printf '%s\n' "$out" | grep -Eq "^keep-oci-root +[0-9.]+[BKMG] +[0-9-]+ [0-9:]+ +$TMPD/other.sqsh\$" ||
		fail "cache list does not show keep-oci-root with its size, last use and image: $out"
	as root "$CTRUN" cache remove keep-oci-root
	assert_eq 0 "$rc" "cache remove keep-oci-root: $out"
	as root "$CTRUN" cache list
	printf '%s\n' "$out" | grep -q "^keep-oci-root " && fail "still listed after remove: $out"
	as root sh -c 'ls "$CTRUN_CACHE_DIR/containers"'
	case $out in *keep-oci-root*) fail "its directory is still there: $out" ;; esac
	as user "$CTRUN" cache list
	printf '%s\n' "$out" | grep -q "^keep-oci-user " || fail "the user's list: $out"
	printf '%s\n' "$out" | grep -q "^share " && fail "the user sees root's containers: $out"
	as user "$CTRUN" cache remove keep-oci-user
	assert_eq 0 "$rc" "the user's cache remove: $out"
}
behaviour "cache list shows named containers (name, size, last use, image); cache remove NAME removes one" \
	named_list_remove

# ---- saving (--save, ctrun save) ----
no_temps() { # DIR
	local left
	left=$(find "$1" -maxdepth 1 -name '*.ctrun-tmp.*' 2>/dev/null)
	[ -z "$left" ] || fail "temporary files left: $left"
}

# pip-like changes in the torch image (a module added under /usr/local, a
# file removed), saved, then a 2x2 DDP job on both nodes from the new image.
save_pip_like_then_ddp() {
	need_image TORCH torch.sqsh
	local dp=/usr/local/lib/python3.11/dist-packages
	run_rc srun -N1 -w "$N" "$CTRUN" -q --no-prefix --image "$TORCH" --save "$TMPD/torch-saved.sqsh" -- \
		sh -c "mkdir -p $dp && echo 'VALUE = 42' > $dp/ctrun_probe.py && rm /usr/bin/tac && echo changed" > run.out 2>&1
	assert_eq 0 "$rc" "--save of the torch image: $(cat run.out)"
	[ -s torch-saved.sqsh ] || fail "no torch-saved.sqsh"
	no_temps "$TMPD"
	mkdir -p ddp && chmod 777 ddp
	cp "$CTRUN_REPO/examples/train_ddp.py" .
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TMPD/torch-saved.sqsh" --nproc-per-node 2 \
		train_ddp.py --epochs 1 --out "$TMPD/ddp" > ddp.out 2>&1
	assert_eq 0 "$rc" "DDP 2x2 from the saved image: $(tail -5 ddp.out)"
	check_ddp "$TMPD/ddp" 2 2
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" -q --no-prefix --image "$TMPD/torch-saved.sqsh" -- \
		sh -c '/usr/bin/python3 -c "import ctrun_probe; print(ctrun_probe.VALUE)"; [ ! -e /usr/bin/tac ] && echo tac-gone' > run.out 2>&1
	assert_eq 0 "$rc" "the saved changes on both nodes: $(cat run.out)"
	assert_eq "42;42;tac-gone;tac-gone;" "$(sort run.out | tr '\n' ';')" "the saved changes on both nodes"
}
behaviour "--save after pip-like changes: the new squashfs runs DDP 2x2 on both nodes, changes kept" \
	save_pip_like_then_ddp

save_as_user() {
	as user "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --save "$TMPD/user-saved.sqsh" -- \
		sh -c 'echo mine > /home/saved-by-user'
	assert_eq 0 "$rc" "--save as the test user: $out"
	assert_eq ctrunuser "$(stat -c %U user-saved.sqsh)" "owner of the saved file"
	as user "$CTRUN" -q --no-prefix --runtime oci --image "$TMPD/user-saved.sqsh" -- cat /home/saved-by-user
	assert_eq mine "$out" "the user's saved image"
	no_temps "$TMPD"
}
behaviour "--save as the test user: the file is the user's and runs" save_as_user

save_bad_paths() {
	rm -f ran
	run_rc srun -N1 -w "$N" "$CTRUN" -q --runtime oci --image bb.sqsh --save "$TMPD/missing/x.sqsh" -- \
		touch "$TMPD/ran" > run.out 2>&1
	assert_eq 2 "$rc" "--save into a missing directory"
	grep -q -- "--save $TMPD/missing/x.sqsh: directory $TMPD/missing does not exist" run.out ||
		fail "message: $(cat run.out)"
	[ ! -e ran ] || fail "the run ran although its save path was bad"
	mkdir -p rootonly && chmod 755 rootonly
	as user "$CTRUN" -q --runtime oci --image bb.sqsh --save "$TMPD/rootonly/x.sqsh" -- touch "$TMPD/ran"
	assert_eq 2 "$rc" "--save into a directory the user cannot write: $out"
	case $out in *"directory $TMPD/rootonly is not writable by you"*) ;; *) fail "message: $out" ;; esac
	[ ! -e ran ] || fail "the user's run ran although its save path was bad"
	[ -z "$(ls -A rootonly)" ] || fail "files in rootonly: $(ls -A rootonly)"
}
behaviour "--save into a missing or unwritable directory: one line, exit 2, before the run" save_bad_paths

# A full disk during the save (a 64 KiB tmpfs): exit 125, nothing written.
save_disk_full() {
	mkdir -p full
	mount -t tmpfs -o size=64k tmpfs full
	run_rc "$CTRUN" -q --runtime oci --image bb.sqsh --save "$TMPD/full/x.sqsh" -- true > run.out 2>&1
	local left
	left=$(ls -A full)
	umount full
	assert_eq 125 "$rc" "--save onto a full disk: $(cat run.out)"
	grep -q -- "--save $TMPD/full/x.sqsh: mksquashfs failed" run.out || fail "message: $(cat run.out)"
	assert_eq "" "$left" "files left on the full disk"
}
behaviour "--save onto a full disk: exit 125, no file and no temporary left" save_disk_full

# Two runs saving to one path at once: each writes its own temporary file
# and renames it; the last rename wins, the file is whole and one of them.
save_concurrent() {
	local a b got
	srun -N1 -w "${NODES[0]}" "$CTRUN" -q --runtime oci --image bb.sqsh --save "$TMPD/same.sqsh" -- \
		sh -c 'echo A > /which' > a.out 2>&1 & a=$!
	srun -N1 -w "${NODES[1]}" "$CTRUN" -q --runtime oci --image bb.sqsh --save "$TMPD/same.sqsh" -- \
		sh -c 'echo B > /which' > b.out 2>&1 & b=$!
	wait "$a" || fail "first save: $(cat a.out)"
	wait "$b" || fail "second save: $(cat b.out)"
	no_temps "$TMPD"
	got=$("$CTRUN" -q --no-prefix --runtime oci --image "$TMPD/same.sqsh" -- cat /which)
	case $got in A | B) ;; *) fail "the saved file is neither run's: '$got'" ;; esac
}
behaviour "two runs saving to one path at once: both succeed, the file is one of them whole" save_concurrent

ctrun_save_named() {
	as user "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name usave -- \
		sh -c 'echo from-shell > /home/probe'
	assert_eq 0 "$rc" "--name usave: $out"
	as user "$CTRUN" -q save usave -o "$TMPD/usave.sqsh"
	assert_eq 0 "$rc" "ctrun save usave -o: $out"
	run_rc srun -N1 -w "${NODES[1]}" "$CTRUN" -q --no-prefix --runtime oci --image "$TMPD/usave.sqsh" -- \
		cat /home/probe > run.out 2>&1
	assert_eq "from-shell" "$(cat run.out)" "the saved named container on the other node"
	as user "$CTRUN" -q save nosuch -o "$TMPD/nosuch.sqsh"
	assert_eq 2 "$rc" "ctrun save of a missing name: $out"
	case $out in *"no named container nosuch"*) ;; *) fail "message: $out" ;; esac
	[ ! -e nosuch.sqsh ] || fail "nosuch.sqsh written"
	no_temps "$TMPD"
}
behaviour "ctrun save NAME -o FILE: a named container as an image, run on another node" ctrun_save_named

# The workflow of examples/keep-and-save.sh: in an allocation, changes kept
# under a name and saved; then the batch example trains from the new image.
example_salloc_save_sbatch() {
	need_image TORCH torch.sqsh
	local ex=$CTRUN_REPO/examples dp=/usr/local/lib/python3.11/dist-packages
	run_rc env IMAGE="$TORCH" NAME=exdev CTRUN="$CTRUN" salloc -N1 -w "$N" bash -c "
		'$ex/keep-and-save.sh' run sh -c 'mkdir -p $dp && echo VALUE=7 > $dp/ex_probe.py' &&
		'$ex/keep-and-save.sh' save '$TMPD/ex-dev.sqsh'" > ex.out 2>&1
	assert_eq 0 "$rc" "salloc: keep-and-save.sh run, save: $(cat ex.out)"
	mkdir -p exddp && chmod 777 exddp
	run_rc env IMAGE="$TMPD/ex-dev.sqsh" CTRUN="$CTRUN" EXAMPLES="$ex" sbatch --wait --quiet \
		-o "$TMPD/exjob.out" --chdir "$TMPD/exddp" "$ex/ddp-container.sbatch"
	assert_eq 0 "$rc" "sbatch ddp-container.sbatch from the saved image: $(tail -5 exjob.out)"
	grep -q "epoch" exjob.out || fail "no training output: $(cat exjob.out)"
	run_rc srun -N1 -w "${NODES[1]}" "$CTRUN" -q --no-prefix --image "$TMPD/ex-dev.sqsh" -- \
		/usr/bin/python3 -c 'import ex_probe; print(ex_probe.VALUE)' > run.out 2>&1
	assert_eq 7 "$(cat run.out)" "the change made in the allocation, on the other node"
}
behaviour "examples/keep-and-save.sh: salloc, keep, save, then sbatch DDP from the saved image" \
	example_salloc_save_sbatch

# `ctrun shell` with the same --name continues the container too.
named_shell() {
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name shellkeep -- sh -c 'echo from-run > /home/x'
	assert_eq 0 "$rc" "--name shellkeep: $out"
	as root "$CTRUN" -q --runtime oci shell --image bb.sqsh --name shellkeep sh -c 'cat /home/x; echo from-shell >> /home/x'
	assert_eq 0 "$rc" "ctrun shell --name: $out"
	assert_eq from-run "$out" "ctrun shell sees the run's change"
	as root "$CTRUN" -q --no-prefix --runtime oci --image bb.sqsh --name shellkeep -- cat /home/x
	assert_eq "from-run;from-shell;" "$(printf '%s\n' "$out" | tr '\n' ';')" "a run sees the shell's change"
}
behaviour "ctrun shell --name continues the container, and a later run continues the shell's" named_shell

all_clean() {
	nothing_left
	no_temps "$TMPD"
}
behaviour "nothing left behind after the named and saving runs (containers, mounts, run directories, temporaries)" \
	all_clean

# ---- a real enroot ----
enroot_real() {
	[ -x /opt/enroot/bin/enroot ] ||
		skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
}
export PATH=/opt/enroot/bin:$PATH ENROOT_RUNTIME_PATH=$TMPD/enroot-run

enroot_root() {
	enroot_real
	writable_then_gone enroot root
}
behaviour "enroot: as root, --rw over its own start of the squashfs, gone in the next run; read-only without" \
	enroot_root
enroot_user() {
	enroot_real
	writable_then_gone enroot user
}
behaviour "enroot: as the test user, the same" enroot_user

# The node's shared container (ctrun-<identity>, made by --image-mode unpack)
# is never the root of a writable run: `enroot start --rw` would write into
# it for every later run.
enroot_shared_untouched() {
	enroot_real
	as root "$CTRUN" -q --runtime enroot --image-mode unpack --image bb.sqsh -- true
	assert_eq 0 "$rc" "enroot create (unpack): $out"
	writable_then_gone enroot root
	as root sh -c "ls -d \$CTRUN_CACHE_DIR/enroot-data/ctrun-*/persist-probe \$CTRUN_CACHE_DIR/enroot-data/ctrun-*/usr/persist-probe 2>&1 || true"
	case $out in *"No such file"*"No such file"*) ;; *) fail "the shared enroot container was written: $out" ;; esac
	as root "$CTRUN" -q --runtime enroot --image-mode unpack --image bb.sqsh --writable -- true
	assert_eq 2 "$rc" "--writable --image-mode unpack under enroot"
	case $out in *"--writable with --image-mode unpack"*) ;; *) fail "message: $out" ;; esac
}
behaviour "enroot: a writable run never writes into the node's shared container" enroot_shared_untouched
enroot_named_root() {
	enroot_real
	named_keeps enroot root
}
behaviour "enroot: --name as root, its own container, kept across two steps and across jobs" enroot_named_root
# enroot starts one container many times at once itself (its rootfs lock,
# enroot#126): ctrun's runs of one name under enroot share it.
enroot_named_at_once() {
	enroot_real
	named_at_once root enroot steps
}
behaviour "enroot: --name, 4 runs at once share enroot's one container" enroot_named_at_once
# auto would take ctrun's own start here (enroot's configuration is its
# own): a container that enroot made stays enroot's, its changes with it.
enroot_named_auto() {
	enroot_real
	as root "$CTRUN" --no-prefix -v --image bb.sqsh --name keep-enroot-root -- cat /usr/kept
	assert_eq 0 "$rc" "auto with --name keep-enroot-root: $out"
	grep -q "^ctrun: enroot container " run.out || fail "auto did not take enroot: $out"
	grep -qx step1 run.out || fail "auto did not continue enroot's container: $out"
}
behaviour "enroot: --name made by enroot, run again without --runtime: still enroot's container" enroot_named_auto
# enroot create unpacks as the user: an image without device nodes.
nodev_image() {
	[ -e nodev.sqsh ] && return
	rm -rf nodev && unsquashfs -q -d nodev bb.sqsh > /dev/null && rm -f nodev/dev/* &&
		mksquashfs nodev nodev.sqsh -noappend -quiet > /dev/null && chmod 644 nodev.sqsh
}
enroot_named_user() {
	enroot_real
	nodev_image
	named_keeps enroot user nodev.sqsh
}
behaviour "enroot: --name as the test user, kept across jobs" enroot_named_user
enroot_save_named() {
	enroot_real
	as root "$CTRUN" -q --no-prefix --runtime enroot --image bb.sqsh --name esave -- \
		sh -c 'mkdir -p /usr/local && echo e > /usr/local/efile'
	assert_eq 0 "$rc" "enroot --name esave: $out"
	as root "$CTRUN" -q --runtime enroot --image bb.sqsh --name esave --save "$TMPD/esave.sqsh" -- true
	assert_eq 0 "$rc" "enroot --name --save: $out"
	as root "$CTRUN" -q --runtime enroot save esave -o "$TMPD/esave2.sqsh"
	assert_eq 0 "$rc" "enroot: ctrun save esave: $out"
	for f in esave esave2; do
		as root "$CTRUN" -q --no-prefix --runtime enroot --image "$TMPD/$f.sqsh" -- cat /usr/local/efile
		assert_eq e "$out" "enroot runs $f.sqsh"
	done
	# The listing whole first: an early grep -q would end unsquashfs with
	# SIGPIPE, and under pipefail the match would go unseen.
	unsquashfs -l esave.sqsh > esave.list
	! grep -qE '/\.lock$|/\.ctrun$' esave.list || fail "enroot's lock or ctrun's mount point saved"
}
behaviour "enroot: --save and ctrun save of a named container, runnable at once" enroot_save_named

# --save without --name under enroot (issue 33): the saving task gets an
# enroot container of its own in its run directory (enroot's own writable
# start keeps its changes in a tmpfs that ends with it), saved after the
# run and removed with the run directory.
no_rundirs() { # WHAT: no run directory of a ctrun of node N (its owner file: "HOST PID")
	local left
	left=$("$CLUSTER" exec "$N" sh -c "grep -ls '^$N ' ${TMPDIR:-/tmp}/ctrun-*/ctrun-*/owner \
/tmp/ctrun-*/ctrun-*/owner 2>/dev/null" || true)
	[ -z "$left" ] || fail "$1: left on $N: $left"
}
enroot_save_unnamed() { # root|user
	enroot_real
	local who=$1 img=bb.sqsh
	[ "$who" = root ] || { nodev_image && img=nodev.sqsh; }
	as "$who" "$CTRUN" -q --no-prefix --runtime enroot --writable --save "$TMPD/eun-$who.sqsh" \
		--image "$img" -- sh -c "mkdir -p /usr/local && echo unnamed-$who > /usr/local/ufile && rm /bin/vi && echo ran"
	assert_eq 0 "$rc" "enroot --writable --save without --name ($who): $out"
	printf '%s\n' "$out" | grep -qx ran || fail "the command did not run ($who): $out"
	no_temps "$TMPD"
	no_rundirs "after the save ($who)"
	as "$who" "$CTRUN" -q --no-prefix --runtime enroot --image "$TMPD/eun-$who.sqsh" -- \
		sh -c 'cat /usr/local/ufile; if [ -e /bin/vi ]; then echo vi-back; else echo vi-gone; fi'
	assert_eq 0 "$rc" "enroot runs eun-$who.sqsh: $out"
	assert_eq "unnamed-$who;vi-gone;" "$(printf '%s\n' "$out" | tr '\n' ';')" "the saved changes ($who)"
	no_rundirs "after the run of the saved image ($who)"
}
behaviour "enroot: --save without --name as root: its own container, saved, then removed" \
	enroot_save_unnamed root
behaviour "enroot: --save without --name as the test user: the same" enroot_save_unnamed user

# Two tasks of a step on the node: the first saves (node rank 0's first
# task, as under every runtime); the other runs writable over enroot's own
# start of the file, never over a shared container.
enroot_save_two_tasks() {
	enroot_real
	run_rc srun -N1 -n2 -w "$N" "$CTRUN" -q --no-prefix --runtime enroot --save "$TMPD/etwo.sqsh" \
		--image bb.sqsh -- sh -c 'mkdir -p /usr/local && echo "$SLURM_PROCID" > /usr/local/who && echo ok' > run.out 2>&1
	assert_eq 0 "$rc" "srun -n2 ctrun --runtime enroot --save: $(cat run.out)"
	assert_eq 2 "$(grep -cx ok run.out)" "both tasks ran: $(cat run.out)"
	as root "$CTRUN" -q --no-prefix --runtime enroot --image "$TMPD/etwo.sqsh" -- cat /usr/local/who
	assert_eq 0 "$out" "the saved image is task 0's"
	no_rundirs "after two tasks"
}
behaviour "enroot: --save without --name, two tasks on a node: task 0's container saved" enroot_save_two_tasks

# The issue's command as a user types it: enroot installed, no --runtime.
enroot_installed_auto_save() {
	enroot_real
	as root "$CTRUN" -q --no-prefix --writable --save "$TMPD/eauto.sqsh" --image bb.sqsh -- \
		sh -c 'echo auto > /usr/autofile && echo ran'
	assert_eq 0 "$rc" "ctrun --writable --save with enroot installed: $out"
	as root "$CTRUN" -q --no-prefix --image "$TMPD/eauto.sqsh" -- cat /usr/autofile
	assert_eq auto "$out" "the saved image"
}
behaviour "enroot: installed, --writable --save without --runtime or --name: saved" enroot_installed_auto_save
enroot_nothing_left() {
	enroot_real
	nothing_left
	assert_no_leftovers "squashfuse.*$TMPD" 5
}
behaviour "enroot: nothing left behind (FUSE, mounts, containers)" enroot_nothing_left

# ---- a real Singularity 3.4.2 ----
# Without overlay support (no setuid starter: also as root here, where it
# converts the SIF to a sandbox) it ignores --writable-tmpfs with a warning
# and leaves the root read-only but /usr writable: ctrun refuses instead.
sing_refused() { # root|user
	[ -x /opt/singularity/bin/singularity ] ||
		skip "no real Singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)"
	cp "$(dirname "$BB")/busybox.sif" bb.sif 2>/dev/null || true
	chmod 644 bb.sif
	as "$1" env PATH="/opt/singularity/bin:$PATH" SINGULARITY_TMPDIR="$TMPD" "$CTRUN" -q --runtime singularity \
		--image bb.sif --writable -- true
	assert_eq 125 "$rc" "--writable under Singularity 3.4.2 ($1): $out"
	# srun's own line may come before ctrun's (stdout and stderr merged): ctrun's is the one
	# line that is not srun's.
	case $(printf '%s\n' "$out" | grep -v '^srun: ') in
	"ctrun: --writable: "*"Singularity 3.x) may ignore"*) ;; *) fail "message ($1): $out" ;; esac
	# srun adds its own "srun: error: ... exit code 125" line.
	[ "$(printf '%s\n' "$out" | grep -vc '^srun: ')" -eq 1 ] || fail "more than one line ($1): $out"
}
behaviour "singularity: 3.4.2 as root, --writable refused in one line (it would ignore --writable-tmpfs)" \
	sing_refused root
behaviour "singularity: 3.4.2 as the test user, the same" sing_refused user
