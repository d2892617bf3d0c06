#!/bin/bash
# Environment control and the working directory (issue 24): every row of the
# table in docs/containers.md ("Binds, working directory, environment") --
# host, image, --env KEY, contract, --env KEY=VALUE and --env-file (byte for
# byte), --clean-env (SLURM_* and TERM stay, the rest of the host's goes, what
# the image's /etc/environment sets stays), the working directory with a
# command and with --workdir -- from `srun ctrun`, from a batch script (sbatch
# -> ctrun -> srun) and from `ctrun shell --image IMG CMD`, under runc (OCI,
# as root and as a user), crun, ch-run, a real enroot and a real Singularity
# where installed; --entrypoint sees the worker's environment and `ctrun env
# --image` prints exactly what a worker gets; so does the image's default
# command (no command) under enroot and Singularity.  Then the image's default command in its WorkingDir (a docker
# archive whose config has one; an enroot squashfs whose rc cds), and bad
# input: one line, exit 2, nothing started.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image ROOTFS busybox-rootfs
private_node_cache envctl-cache
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"

# The image: busybox with an /etc/environment of known values; gzip, which
# Singularity 3.4 reads.
cp -a "$ROOTFS" img
cat > img/etc/environment <<'EOF'
PATH=/usr/sbin:/usr/bin:/sbin:/bin
IMG_ONLY=image
BOTH=image
KEYED=image
UNSET_KEYED=image
SAME=same
EOF
mkdir -p img/srv/wd
# enroot's import writes an rc that enters the WorkingDir; this one does the same.
cat > img/etc/rc <<'EOF'
cd /srv/wd && unset OLDPWD || exit 1
if [ $# -gt 0 ]; then exec "$@"; fi
exec /bin/sh -c 'echo "default in $(pwd)"'
EOF
mksquashfs img env.sqsh -comp gzip -noappend -quiet > /dev/null
# The same image whose entrypoint (/etc/rc) reports what it sees, then runs the command.
cat > img/etc/rc <<'EOF'
echo "entrypoint sees KEYED=${KEYED-unset} CLI=${CLI-unset} HOST_ONLY=${HOST_ONLY-unset}"
exec "$@"
EOF
mksquashfs img entry.sqsh -comp gzip -noappend -quiet > /dev/null
# A docker archive whose default command prints where it runs.
python3 "$CTRUN_REPO/tests/images/mkdocker.py" --workdir /srv/wd \
	--cmd '["/bin/sh", "-c", "echo \"default in $(pwd)\""]' wd.tar "$ROOTFS"

# What every worker prints: the table's variables between bars, then its directory.
cat > probe.sh <<'EOF'
for v in HOST_ONLY IMG_ONLY BOTH KEYED UNSET_KEYED SAME CLI FILE_SET FILE_KEY TRICKY TERM RANK; do
	eval "x=\${$v-unset}"
	printf '%s=%s|' "$v" "$x"
done
case ${SLURM_JOB_ID-} in '') s=unset ;; *) s=set ;; esac
case $PATH in *hostonly*) p=host ;; *) p=other ;; esac
printf 'SLURM=%s|PATH=%s|cwd=%s\n' "$s" "$p" "$(pwd)"
EOF
tricky='  a "b" $HOME\n '"'c'"'   '
{
	echo '# the file of --env-file'
	echo
	echo 'FILE_SET=file'
	echo '  FILE_KEY'
	printf 'TRICKY=%s\n' "$tricky"
	echo 'BOTH=file'
} > vars.env
chmod 644 probe.sh vars.env

# The host's side: what the launching shell exports.
export HOST_ONLY=host BOTH=host KEYED=host SAME=same FILE_KEY=fromhost TERM=dumb
export PATH=/hostonly/bin:$PATH

# Expected lines, built from the table (not from ctrun's output).
# A shell is no worker: it gets every layer but the contract (RANK unset).
RANK0=0
line() { # HOST_ONLY BOTH KEYED CLI FILE_SET FILE_KEY TRICKY [cwd]
	printf 'HOST_ONLY=%s|IMG_ONLY=image|BOTH=%s|KEYED=%s|UNSET_KEYED=image|SAME=same|CLI=%s|' \
		"$1" "$2" "$3" "$4"
	printf 'FILE_SET=%s|FILE_KEY=%s|TRICKY=%s|TERM=dumb|RANK=%s|SLURM=set|PATH=other|cwd=%s\n' \
		"$5" "$6" "$7" "$RANK0" "${8:-$TMPD}"
}
# Rows (rows() below): no flag: the host's under the image's; these flags:
flags_layers=(--env KEYED --env UNSET_KEYED --env CLI=cli --env-file vars.env --env BOTH=cli)
# and --clean-env: the host's only where asked;
flags_clean=(--clean-env --env KEYED --env-file vars.env)
# and --workdir /tmp: there, not the current directory (mounted explicitly:
# enroot does not share the host's /tmp).
want_layers=$(line host cli host cli file fromhost "$tricky")
want_clean=$(line unset file host unset file fromhost "$tricky")

# One launch path with one runtime: srun | batch | shell.
launch() { # path runtime flags... (the output line on stdout)
	local path=$1 rt=$2
	shift 2
	case $path in
	srun) srun -N1 -n1 "$CTRUN" -q --runtime "$rt" --image env.sqsh "$@" -- sh "$TMPD/probe.sh" ;;
	shell) srun -N1 -n1 "$CTRUN" -q --runtime "$rt" shell --image env.sqsh "$@" -- sh "$TMPD/probe.sh" ;;
	batch)
		local q
		printf -v q '%q ' "$CTRUN" -q --runtime "$rt" --image env.sqsh "$@" -- sh "$TMPD/probe.sh"
		printf '#!/bin/bash\n#SBATCH --nodes=1\n%s\n' "$q" > job.sh
		rm -f job.out
		sbatch --wait --quiet -o "$TMPD/job.out" job.sh
		cat job.out
		;;
	esac
}
rows() { # path runtime
	local out want_plain want_layers want_clean want_workdir
	[ "$1" != shell ] || RANK0=unset
	want_plain=$(line host image image unset unset fromhost unset)
	want_layers=$(line host cli host cli file fromhost "$tricky")
	want_clean=$(line unset file host unset file fromhost "$tricky")
	want_workdir=$(line host image image unset unset fromhost unset /tmp)
	out=$(launch "$1" "$2")
	assert_eq "$want_plain" "$out" "$1/$2: host < image"
	out=$(launch "$1" "$2" "${flags_layers[@]}")
	assert_eq "$want_layers" "$out" "$1/$2: --env KEY, --env-file, --env KEY=VALUE"
	out=$(launch "$1" "$2" "${flags_clean[@]}")
	assert_eq "$want_clean" "$out" "$1/$2: --clean-env"
	out=$(launch "$1" "$2" --workdir /tmp --mount "$TMPD")
	assert_eq "$want_workdir" "$out" "$1/$2: --workdir"
	# The contract wins over the file, --env RANK=VALUE over the contract.
	out=$(launch "$1" "$2" --env RANK=7)
	assert_eq "RANK=7|" "$(grep -o 'RANK=[^|]*|' <<<"$out")" "$1/$2: --env RANK=7"
}

enroot_env() {
	[ -x /opt/enroot/bin/enroot ] ||
		skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
	export PATH=/opt/enroot/bin:$PATH CTRUN_NV=false ENROOT_RUNTIME_PATH=$TMPD/enroot-run
}
sing_env() {
	[ -x /opt/singularity/bin/singularity ] ||
		skip "no real singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)"
	mkdir -p "$TMPD/stmp"
	export PATH=/opt/singularity/bin:$PATH CTRUN_NV=false SINGULARITY_TMPDIR=$TMPD/stmp
}
for path in srun batch shell; do
	behaviour "every row of the table from $path, oci" rows "$path" oci
done
# Charliecloud (ch-run passes its environment into the container, as enroot
# does) and crun (the OCI driver with crun; root only here, docs/containers.md).
for path in srun batch shell; do
	behaviour "every row of the table from $path, charliecloud" rows "$path" charliecloud
done
behaviour "every row of the table from srun, crun" rows srun crun

# Real enroot and Singularity: behaviours named "enroot: ..." and
# "singularity: ...", which tests/skips.allowed lets skip alone on a machine
# without them (../shared/tools builds them into /opt).
for path in srun batch shell; do
	behaviour "enroot: every row of the table from $path" eval 'enroot_env && rows "$path" enroot'
	behaviour "singularity: every row of the table from $path" eval 'sing_env && rows "$path" singularity'
done

# The entrypoint (--entrypoint: the image's /etc/rc) runs with the worker's
# environment under every runtime; and `ctrun env --image` prints exactly the
# environment a worker gets (one step, so Slurm's variables are the same).
entry_and_env() { # runtime
	local out
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime "$1" --entrypoint --image entry.sqsh --clean-env \
		--env KEYED --env CLI=cli -- true)
	assert_eq "entrypoint sees KEYED=host CLI=cli HOST_ONLY=unset" "$out" "$1: --entrypoint"
	srun -N1 -n1 sh -c '"$0" -q --runtime "$1" --master-port 29511 --image env.sqsh --clean-env \
		--env KEYED --env-file vars.env env > printed.txt &&
		"$0" -q --runtime "$1" --master-port 29511 --image env.sqsh --clean-env --env KEYED \
		--env-file vars.env -- env > worker.txt' "$CTRUN" "$1"
	# Singularity names each container's own temporary sandbox: the one
	# variable that differs between two containers of the same image.
	own='^(SINGULARITY|APPTAINER)_CONTAINER='
	sort worker.txt | grep -Ev "$own" > worker.sorted
	grep -Ev "$own" printed.txt > printed.cmp
	grep -q "^KEYED=host$" printed.txt || fail "$1: ctrun env --image: no KEYED=host: $(cat printed.txt)"
	diff printed.cmp worker.sorted > env.diff || fail "$1: ctrun env --image differs from a worker's: $(cat env.diff)"
}
behaviour "--entrypoint sees the worker's environment; ctrun env --image prints it, oci" entry_and_env oci
behaviour "enroot: --entrypoint sees the worker's environment; ctrun env --image prints it" \
	eval 'enroot_env && entry_and_env enroot'
behaviour "singularity: --entrypoint sees the worker's environment; ctrun env --image prints it" \
	eval 'sing_env && entry_and_env singularity'

# The image's default command (`ctrun --image IMG`, no command) gets the
# table's environment as a shell does (every layer but the contract), under
# enroot and Singularity too, which used to run it themselves with their own
# environment: an /etc/rc (enroot's form: sourced, no #!), a runscript before
# it, and without either a shell (no error), its exit status ctrun's.
rm -rf defimg && cp -a "$ROOTFS" defimg
cp img/etc/environment defimg/etc/environment
printf '[ $# -eq 0 ] || exec "$@"\nexec sh %q\n' "$TMPD/probe.sh" > defimg/etc/rc
mksquashfs defimg rcdef.sqsh -comp gzip -noappend -quiet > /dev/null
mkdir -p defimg/.singularity.d
printf '#!/bin/sh\nexec sh %q\n' "$TMPD/probe.sh" > defimg/.singularity.d/runscript
chmod 755 defimg/.singularity.d/runscript
echo 'echo "the rc ran, not the runscript"' > defimg/etc/rc
mksquashfs defimg rundef.sqsh -comp gzip -noappend -quiet > /dev/null
rm -rf defimg/.singularity.d defimg/etc/rc
mksquashfs defimg nodef.sqsh -comp gzip -noappend -quiet > /dev/null
image_default() { # runtime image
	local out RANK0=unset
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime "$1" --image "$2" < /dev/null)
	assert_eq "$(line host image image unset unset fromhost unset)" "$out" "$1 $2: host < image"
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime "$1" --image "$2" "${flags_layers[@]}" < /dev/null)
	assert_eq "$(line host cli host cli file fromhost "$tricky")" "$out" \
		"$1 $2: --env KEY, --env-file, --env KEY=VALUE"
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime "$1" --image "$2" "${flags_clean[@]}" < /dev/null)
	assert_eq "$(line unset file host unset file fromhost "$tricky")" "$out" "$1 $2: --clean-env"
	# Exactly what a shell (`ctrun shell --image IMG CMD`) sees.
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime "$1" shell --image "$2" "${flags_clean[@]}" -- \
		sh "$TMPD/probe.sh")
	assert_eq "$(line unset file host unset file fromhost "$tricky")" "$out" "$1 $2: a shell, --clean-env"
}
no_default() { # runtime
	local out
	set +e
	out=$(echo 'echo "sh sees KEYED=$KEYED HOST_ONLY=${HOST_ONLY-unset}"; exit 7' |
		srun -N1 -n1 "$CTRUN" -q --runtime "$1" --image nodef.sqsh --clean-env --env KEYED=cli)
	rc=$?
	set -e
	assert_eq "sh sees KEYED=cli HOST_ONLY=unset" "$out" "$1: no rc nor runscript: a shell"
	assert_eq 7 "$rc" "$1: the shell's exit status"
	srun -N1 -n1 "$CTRUN" --runtime "$1" --image nodef.sqsh --dry-run > dry.txt < /dev/null
	grep -q "^# agent runs, with no arguments, the image's default command: the first found of: " dry.txt ||
		fail "$1: --dry-run does not say the agent runs the image's default: $(cat dry.txt)"
}
behaviour "enroot: the image's default command sees --env and --clean-env" \
	eval 'enroot_env && image_default enroot rcdef.sqsh && no_default enroot'
behaviour "singularity: the image's default command sees --env and --clean-env" \
	eval 'sing_env && image_default singularity rcdef.sqsh && image_default singularity rundef.sqsh &&
		no_default singularity'


# As an HPC user (rootless runc): the same rows through srun.
as_user() {
	local out q
	printf -v q '%q ' env "HOST_ONLY=host" "BOTH=host" "KEYED=host" "SAME=same" "FILE_KEY=fromhost" \
		"TERM=dumb" "PATH=$PATH" "SLURM_CONF=$SLURM_CONF" "CTRUN_CACHE_DIR=$TMPD/ucache" \
		srun -N1 -n1 "$CTRUN" -q --runtime oci --image env.sqsh "${flags_layers[@]}" -- sh "$TMPD/probe.sh"
	out=$(su "$user" -s /bin/bash -c "cd '$TMPD' && $q")
	assert_eq "$want_layers" "$out" "as $user: --env KEY, --env-file, --env KEY=VALUE"
	printf -v q '%q ' env "HOST_ONLY=host" "BOTH=host" "KEYED=host" "SAME=same" "FILE_KEY=fromhost" \
		"TERM=dumb" "PATH=$PATH" "SLURM_CONF=$SLURM_CONF" "CTRUN_CACHE_DIR=$TMPD/ucache" \
		srun -N1 -n1 "$CTRUN" -q --runtime oci --image env.sqsh "${flags_clean[@]}" -- sh "$TMPD/probe.sh"
	out=$(su "$user" -s /bin/bash -c "cd '$TMPD' && $q")
	assert_eq "$want_clean" "$out" "as $user: --clean-env"
}
behaviour "every row of the table as $user (rootless runc)" as_user

# ctrun.ini's `env = KEY` and CTRUN_ENV=KEY: the same as --env KEY.
config_keys() {
	printf '[run]\nenv = KEYED\nclean_env = true\n' > ctrun.ini
	out=$(CTRUN_CONFIG=$TMPD/ctrun.ini srun -N1 -n1 "$CTRUN" -q --image env.sqsh -- sh "$TMPD/probe.sh")
	assert_eq "$(line unset image host unset unset unset unset)" "$out" "ctrun.ini env = KEYED, clean_env"
	out=$(CTRUN_ENV=KEYED srun -N1 -n1 "$CTRUN" -q --image env.sqsh -- sh "$TMPD/probe.sh")
	assert_eq "$(line host image host unset unset fromhost unset)" "$out" "CTRUN_ENV=KEYED"
}
behaviour "env = KEY in ctrun.ini and CTRUN_ENV=KEY take the host's value" config_keys

# No container: the same rows but the image's.
no_container() {
	local out
	out=$(srun -N1 -n1 "$CTRUN" -q "${flags_clean[@]}" -- sh "$TMPD/probe.sh")
	assert_eq "HOST_ONLY=unset|IMG_ONLY=unset|BOTH=file|KEYED=host|UNSET_KEYED=unset|SAME=unset|CLI=unset|FILE_SET=file|FILE_KEY=fromhost|TRICKY=$tricky|TERM=dumb|RANK=0|SLURM=set|PATH=other|cwd=$TMPD" \
		"$out" "--clean-env without a container (PATH is docker's default, not the host's)"
	out=$(srun -N1 -n1 "$CTRUN" -q --env KEYED --env CLI=cli -- sh "$TMPD/probe.sh")
	assert_eq "HOST_ONLY=host|IMG_ONLY=unset|BOTH=host|KEYED=host|UNSET_KEYED=unset|SAME=same|CLI=cli|FILE_SET=unset|FILE_KEY=fromhost|TRICKY=unset|TERM=dumb|RANK=0|SLURM=set|PATH=host|cwd=$TMPD" \
		"$out" "--env without a container"
	out=$(srun -N1 -n1 "$CTRUN" -q "${flags_clean[@]}" env)
	assert_eq "BOTH=file;FILE_KEY=fromhost;FILE_SET=file;KEYED=host;" \
		"$(grep -E '^(BOTH|FILE_KEY|FILE_SET|KEYED)=' <<<"$out" | sort | tr '\n' ';')" "ctrun env"
}
behaviour "the same rules without a container, and ctrun env" no_container

# The image's default command runs in its WorkingDir; a command in the current directory.
workdir_default() {
	local out
	out=$(srun -N1 -n1 "$CTRUN" -q --image wd.tar < /dev/null)
	assert_eq "default in /srv/wd" "$out" "docker archive's default command, oci"
	out=$(srun -N1 -n1 "$CTRUN" -q --image wd.tar -- pwd)
	assert_eq "$TMPD" "$out" "docker archive with a command"
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime oci --image env.sqsh < /dev/null)
	assert_eq "default in /srv/wd" "$out" "enroot-style squashfs's rc under oci"
	# As a user too (a fresh unpack in the user's cache).
	out=$(su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' CTRUN_CACHE_DIR='$TMPD/ucache' srun -N1 -n1 '$CTRUN' -q --image wd.tar < /dev/null")
	assert_eq "default in /srv/wd" "$out" "docker archive's default command as $user"
}
behaviour "the image's default command runs in its WorkingDir" workdir_default
workdir_enroot() {
	enroot_env
	out=$(srun -N1 -n1 "$CTRUN" -q --runtime enroot --image env.sqsh < /dev/null)
	assert_eq "default in /srv/wd" "$out" "enroot-style squashfs's rc under enroot"
}
behaviour "enroot: the image's default command runs in its WorkingDir" workdir_enroot

# Bad input: one line naming what and how, exit 2, nothing started.
bad_input() { # flags... -> expects exit 2 and a message matching $want
	run_rc "$CTRUN" --image env.sqsh "$@" -- true 2> err.txt
	assert_eq 2 "$rc" "exit status of $*"
	assert_eq 1 "$(wc -l < err.txt)" "one line for $*: $(cat err.txt)"
	grep -q -- "$want" err.txt || fail "$*: '$(cat err.txt)' does not say '$want'"
}
bad() {
	want="--env-file missing.env: No such file" bad_input --env-file missing.env
	want="--env-file $TMPD: not a regular file" bad_input --env-file "$TMPD"
	printf 'A=1\n# c\nexport B=2\n' > bad.env
	want="--env-file bad.env:3: the name 'export B=2' contains white space" bad_input --env-file bad.env
	printf 'A=1\n=2\n' > bad2.env
	want="--env-file bad2.env:2: no variable name" bad_input --env-file bad2.env
	printf 'RANK\n' > bad3.env
	want="bad3.env:1: RANK is set by ctrun" bad_input --env-file bad3.env
	want="--env: '=x' has no variable name" bad_input --env =x
	want="--env: RANK is set by ctrun for each worker" bad_input --env RANK
	want="CTRUN_ENV: WORLD_SIZE is set by ctrun" CTRUN_ENV=WORLD_SIZE bad_input
	mkfifo fifo.env
	want="not a regular file" bad_input --env-file fifo.env
	# Unreadable for the user who runs ctrun.
	printf 'A=1\n' > secret.env
	chmod 600 secret.env
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && '$CTRUN' --image env.sqsh --env-file secret.env -- true" 2> err.txt
	assert_eq 2 "$rc" "unreadable --env-file"
	grep -q -- "--env-file secret.env: Permission denied" err.txt || fail "unreadable: $(cat err.txt)"
	# From a batch script: the job fails with the same line, no step started.
	printf '#!/bin/bash\n%q --image env.sqsh --env-file missing.env -- true\n' "$CTRUN" > badjob.sh
	run_rc sbatch --wait --quiet -o "$TMPD/badjob.out" badjob.sh
	[ "$rc" -ne 0 ] || fail "a batch job with a missing --env-file succeeded"
	grep -q -- "--env-file missing.env" badjob.out || fail "batch: $(cat badjob.out)"
}
behaviour "bad --env and --env-file input: one line, exit 2, nothing started" bad
behaviour "no container is left" assert_no_containers
