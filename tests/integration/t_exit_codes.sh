#!/bin/bash
# The documented exit codes, each with one line saying what and where.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
expect() { # code pattern what, then the command
	local code=$1 pat=$2 what=$3
	shift 3
	run_rc "$@" 2> err.txt
	assert_eq "$code" "$rc" "$what: exit status"
	assert_eq 1 "$(wc -l < err.txt)" "$what: lines on stderr ($(cat err.txt))"
	grep -q -- "$pat" err.txt || fail "$what: stderr '$(cat err.txt)' does not match '$pat'"
}
printf 'echo hi\n' > notexec.sh
printf '[run]\nmax_restarts = 1\n\n[run]\nbogus_key = 3\n' > bad.ini
printf '[run]\nnproc_per_node = lots\n' > bad2.ini
behaviour "127: missing command" expect 127 "command not found: no-such-command-xyz" "missing command" "$CTRUN" -- no-such-command-xyz
behaviour "126: not executable" expect 126 "notexec.sh" "not executable" "$CTRUN" -- ./notexec.sh
behaviour "2: bad option" expect 2 "unknown option" "bad option" "$CTRUN" --no-such-option true
behaviour "2: bad value" expect 2 "master-port" "bad value" "$CTRUN" --master-port 99999 true
behaviour "2: config unknown key" expect 2 "bad.ini:5: unknown key 'bogus_key'" "config unknown key" env CTRUN_CONFIG="$TMPD/bad.ini" "$CTRUN" true
behaviour "2: config bad value" expect 2 "bad2.ini:2: .*nproc_per_node" "config bad value" env CTRUN_CONFIG="$TMPD/bad2.ini" "$CTRUN" true
behaviour "2: environment bad value" expect 2 "CTRUN_MAX_RESTARTS" "environment bad value" env CTRUN_MAX_RESTARTS=-1 "$CTRUN" true
behaviour "125: malformed hostlist" expect 125 "hostlist" "malformed hostlist" env SLURM_JOB_ID=7 SLURM_STEP_ID=0 'SLURM_STEP_NODELIST=n[1-' \
	SLURM_STEP_TASKS_PER_NODE=1 SLURM_PROCID=0 "$CTRUN" true
behaviour "137: worker killed by SIGKILL" expect 137 "killed by signal 9" "worker killed by SIGKILL" "$CTRUN" -- sh -c 'kill -9 $$'
behaviour "5: worker status passes through" expect 5 "exited with status 5" "worker status passes through" "$CTRUN" -- sh -c 'exit 5'
success() { run_rc "$CTRUN" -- true; assert_eq 0 "$rc" "success"; }
behaviour "0: success" success
