#!/bin/bash
# tag: every-slurm
# pyxis's options through the SPANK plugin, as the test user, each as
# pyxis's tests/*.bats use it: --container-workdir, --container-mounts
# (directories, files, devices, the working directory, several, ro, the
# short form, spaces), --container-env over the image's environment,
# --[no-]container-remap-root, --[no-]container-mount-home,
# --container-writable and the read-only default, --container-entrypoint
# (and its log), --container-save, PYXIS_CONTAINER_* defaults, and
# ctrun's --container-runtime.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image BBDIR busybox-rootfs
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
uid=$(id -u "$SPANK_USER")
home=$(getent passwd "$SPANK_USER" | cut -d: -f6)
# An image with an environment of its own (FOO, LD_LIBRARY_PATH) and an
# enroot-style entrypoint (/etc/rc, sourced by sh) that exports EPVAR and
# prints a line.
cp -a "$BBDIR" img
printf 'FOO=image\nLD_LIBRARY_PATH=/image/lib\n' >> img/etc/environment
printf 'echo EP-LOG-LINE\nexport EPVAR=from-entrypoint\nexport EPSAW="${EPHOST:-none}"\nexec "$@"\n' \
	> img/etc/rc
# A command only the image has (pyxis's path.bats: Slurm finds it in the
# container's PATH, not the host's).
printf '#!/bin/sh\necho only-in-image\n' > img/usr/bin/ctrun-only-in-image
chmod 755 img/usr/bin/ctrun-only-in-image
mksquashfs img env.sqsh -noappend -quiet -no-progress > /dev/null
chmod 644 env.sqsh
run() { as_user srun -N1 --container-image="$BB" "$@"; }
# A directory outside /tmp (which ctrun binds into OCI containers, as
# enroot does): srun's working directory and $HOME for the rows that
# check what is bound.
VT=$(mktemp -d /var/tmp/ctrun-it-wd.XXXXXX)
chmod 755 "$VT"
mkdir "$VT/submit" "$VT/althome" && echo marker > "$VT/althome/mark" && echo x > "$VT/submit/here"
chown "$SPANK_USER" "$VT/submit" "$VT/althome"
trap 'rm -rf "$VT"; spank_cluster_down' EXIT

# Images with a WORKDIR, as enroot's import writes it into /etc/rc (the
# line pyxis's tasks start after) and as ctrun's unpack writes it.
cp -a "$BBDIR" wdimg
mkdir -p wdimg/workspace wdimg/opt/app
printf '# enroot-provenance: docker://nvcr.io#nvidia/pytorch:24.06-py3\n\nmkdir -p "/workspace" 2> /dev/null\ncd "/workspace" && unset OLDPWD || exit 1\n\nif [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n' \
	> wdimg/etc/rc
mksquashfs wdimg wd-enroot.sqsh -noappend -quiet -no-progress > /dev/null
printf 'if [ $# -gt 0 ]; then\n\texec "$@"\nelse\n\tcd /opt/app && unset OLDPWD || exit 1\n\texec /bin/sh\nfi\n' \
	> wdimg/etc/rc
mksquashfs wdimg wd-ctrun.sqsh -noappend -quiet -no-progress > /dev/null
chmod 644 wd-enroot.sqsh wd-ctrun.sqsh
# This cluster's plugstack line, with ARGS... after it (slurmstepd reads
# the file at each step's start), or as it was.
plugstack_args() {
	local conf=$CTRUN_CLUSTER_DIR/etc/plugstack.conf
	[ -f "$conf.orig" ] || cp "$conf" "$conf.orig"
	cp "$conf.orig" "$conf"
	[ $# -eq 0 ] || sed -i "s|^required \(.*ctrun=[^ ]*\)|required \1 $*|" "$conf"
}

workdir() {
	assert_eq "/usr/bin" "$(run --container-workdir=/usr/bin pwd)" "--container-workdir=/usr/bin"
	assert_eq "/usr/bin" "$(run --container-workdir=/usr/bin sh -c 'echo $PWD')" "PWD"
	assert_eq "/" "$(run --container-workdir=../ pwd)" "--container-workdir=../ (pyxis: the root)"
	# pyxis's rule: the image's working directory, / without one; srun's
	# directory is not bound.
	assert_eq "/" "$(run pwd)" "no --container-workdir, an image without a WORKDIR: /"
	as_user srun -N1 --chdir="$VT/submit" --container-image="$BB" sh -c "test ! -e '$VT/submit/here'" ||
		fail "srun's directory is bound"
	assert_eq "/workspace /workspace;/workspace /workspace;" "$(as_user srun -N1 -n2 \
		--container-image="$TMPD/wd-enroot.sqsh" sh -c 'echo $(pwd) $PWD' | tr '\n' ';')" \
		"the WORKDIR of enroot's /etc/rc, in every task"
	assert_eq "/opt/app" "$(as_user srun -N1 --container-image="$TMPD/wd-ctrun.sqsh" pwd)" \
		"the WORKDIR of ctrun's /etc/rc"
	assert_eq "/tmp" "$(as_user srun -N1 --container-image="$TMPD/wd-enroot.sqsh" \
		--container-workdir=/tmp pwd)" "--container-workdir over the image's"
	# ctrun's rule, for a site that asks for it: srun's directory, bound.
	plugstack_args default_workdir=srun
	assert_eq "$VT/submit here" "$(as_user srun -N1 --chdir="$VT/submit" \
		--container-image="$TMPD/wd-enroot.sqsh" sh -c 'echo $(pwd) $(ls)')" \
		"default_workdir=srun: the submit directory, bound"
	plugstack_args
	assert_eq "/usr/bin" "$(PYXIS_CONTAINER_WORKDIR=/usr/bin run pwd)" "PYXIS_CONTAINER_WORKDIR"
	assert_eq "/tmp" "$(PYXIS_CONTAINER_WORKDIR=/usr/bin run --container-workdir=/tmp pwd)" \
		"--container-workdir over PYXIS_CONTAINER_WORKDIR"
}
behaviour "--container-workdir" workdir

mounts() {
	mkdir -p "src dir" && echo hello > "src dir/file.txt" && echo content > file.txt
	run --container-mounts=/home:/test-mnt sh -c 'grep -q " /test-mnt " /proc/self/mounts'
	assert_eq content "$(run --container-mounts="$TMPD/file.txt:/script.txt" cat /script.txt)" \
		"a regular file"
	run --container-mounts=/dev/null:/null sh -c 'test -c /null'
	assert_eq content "$(run --container-mounts=./:/test-mnt cat /test-mnt/file.txt)" \
		"the working directory (./)"
	run --container-mounts=./:/test-mnt,/dev/null:/null,/home:/host/home \
		sh -c 'test -f /test-mnt/file.txt && test -c /null && test -d /host/home'
	run_rc run --container-mounts=/tmp:/mnt:ro touch /mnt/foo 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "ro: $rc $(cat err)"
	run_rc run --container-mounts=/tmp:/mnt:ro+rprivate touch /mnt/foo 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "ro+rprivate: $rc $(cat err)"
	# pyxis's "multiple flags: unbindable+ro": read-only, and unbindable
	# (mountinfo's optional fields).
	run_rc run --container-mounts=/tmp:/mnt:unbindable+ro touch /mnt/foo 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "unbindable+ro: $rc $(cat err)"
	run --container-mounts=/tmp:/mnt:unbindable+ro awk '$5 == "/mnt" && / unbindable / { f = 1 }
		END { exit !f }' /proc/self/mountinfo || fail "unbindable+ro: /mnt is not unbindable"
	run sh -c '! grep -q " /var/lib " /proc/self/mounts'
	run --container-mounts=/var/lib sh -c 'grep -q " /var/lib " /proc/self/mounts'
	assert_eq hello "$(run --container-mounts="$TMPD/src dir:/mnt/my mount" cat "/mnt/my mount/file.txt")" \
		"spaces in source and destination"
	# A file the user may not read is bound, and stays unreadable.
	run --container-mounts=/etc/shadow:/shadow test -e /shadow
	run_rc run --container-mounts=/etc/shadow:/shadow cat /shadow 2> err
	[ "$rc" -ne 0 ] && grep -q 'Permission denied' err || fail "/etc/shadow: $rc $(cat err)"
	assert_eq "/test-mnt" "$(PYXIS_CONTAINER_MOUNTS=/home:/test-mnt as_user srun -N1 --container-image="$BB" \
		sh -c 'grep -o " /test-mnt " /proc/self/mounts | tr -d " "')" "PYXIS_CONTAINER_MOUNTS"
	PYXIS_CONTAINER_MOUNTS=/home:/mnt-env as_user srun -N1 --container-image="$BB" \
		--container-mounts=/tmp:/mnt-cli sh -c 'grep -q " /mnt-cli " /proc/self/mounts &&
		! grep -q " /mnt-env " /proc/self/mounts' || fail "--container-mounts over PYXIS_CONTAINER_MOUNTS"
}
behaviour "--container-mounts" mounts

# pyxis's mounts.bats "tmpfs", "tmpfs huge pages", "umount" (findmnt there;
# busybox has none: the container's mount table).
cat > mnt.sh <<'SH'
awk -v d="$1" -v f="$2" '$2 == d { v = $f } END { print (v == "" ? "none" : v) }' /proc/self/mounts
SH
chmod 644 mnt.sh
tmpfs_umount() {
	assert_eq tmpfs "$(run --container-mounts=tmpfs:/mytmpfs sh "$TMPD/mnt.sh" /mytmpfs 3)" \
		"--container-mounts=tmpfs:/mytmpfs"
	case ",$(run --container-mounts=tmpfs:/mytmpfs:huge=within_size sh "$TMPD/mnt.sh" /mytmpfs 4)," in
	*,huge=within_size,*) ;;
	*) fail "tmpfs:/mytmpfs:huge=within_size: not in the mount's options" ;;
	esac
	[ "$(run --container-mount-home --container-remap-root sh "$TMPD/mnt.sh" /root 3)" != none ] ||
		fail "--container-mount-home --container-remap-root: nothing at /root"
	assert_eq none "$(run --container-mount-home --container-remap-root --container-mounts umount:/root \
		sh "$TMPD/mnt.sh" /root 3)" "umount:/root after --container-mount-home"
	run_rc run --container-mounts=tmpfs:/t:size=1g+uid=0 true 2> err
	assert_eq 125 "$rc" "tmpfs:/t:size=1g+uid=0 (an option ctrun does not take)"
	grep -q "bad tmpfs option" err || fail "tmpfs:/t:size=1g+uid=0: $(cat err)"
}
behaviour "--container-mounts tmpfs:, tmpfs:...:huge=, umount:" tmpfs_umount

envs() {
	local img=(--container-image="$TMPD/env.sqsh")
	assert_eq "image" "$(FOO=host as_user srun -N1 "${img[@]}" sh -c 'echo $FOO')" "the image's FOO wins"
	assert_eq "host" "$(FOO=host as_user srun -N1 "${img[@]}" --container-env=FOO sh -c 'echo $FOO')" \
		"--container-env=FOO: the host's"
	assert_eq "image" "$(as_user srun -N1 "${img[@]}" --container-env=FOO sh -c 'echo $FOO')" \
		"--container-env=FOO without one on the host: the image's"
	assert_eq "bar" "$(BAR=bar as_user srun -N1 "${img[@]}" sh -c 'echo $BAR')" "a host variable"
	assert_eq "/image/lib" "$(LD_LIBRARY_PATH=/host/lib as_user srun -N1 "${img[@]}" \
		sh -c 'echo $LD_LIBRARY_PATH')" "the image's LD_LIBRARY_PATH"
	assert_eq "/host/lib" "$(LD_LIBRARY_PATH=/host/lib as_user srun -N1 "${img[@]}" \
		--container-env=LD_LIBRARY_PATH sh -c 'echo $LD_LIBRARY_PATH')" "--container-env=LD_LIBRARY_PATH"
	assert_eq "" "$(LD_PRELOAD=/x.so as_user srun -N1 --container-image="$BB" sh -c 'echo $LD_PRELOAD')" \
		"the host's LD_PRELOAD"
	assert_eq "dumb" "$(TERM=dumb as_user srun -N1 --container-image="$BB" sh -c 'echo $TERM')" "TERM"
	assert_eq "image" "$(FOO=host PYXIS_CONTAINER_ENV=BAR as_user srun -N1 "${img[@]}" sh -c 'echo $FOO')" \
		"PYXIS_CONTAINER_ENV names another"
	assert_eq "host" "$(FOO=host PYXIS_CONTAINER_ENV=FOO as_user srun -N1 "${img[@]}" sh -c 'echo $FOO')" \
		"PYXIS_CONTAINER_ENV=FOO"
	assert_eq "image /host/lib" "$(FOO=host LD_LIBRARY_PATH=/host/lib PYXIS_CONTAINER_ENV=FOO as_user srun -N1 \
		"${img[@]}" --container-env=LD_LIBRARY_PATH sh -c 'echo $FOO $LD_LIBRARY_PATH')" \
		"--container-env over PYXIS_CONTAINER_ENV"
}
behaviour "the image's environment, --container-env" envs

identity() {
	assert_eq "$uid" "$(run id -u)" "uid"
	assert_eq "$uid" "$(run --no-container-remap-root id -u)" "--no-container-remap-root"
	assert_eq "0" "$(run --container-remap-root id -u)" "--container-remap-root"
	assert_eq "0" "$(PYXIS_CONTAINER_REMAP_ROOT=1 as_user srun -N1 --container-image="$BB" id -u)" \
		"PYXIS_CONTAINER_REMAP_ROOT=1"
	assert_eq "$uid" "$(PYXIS_CONTAINER_REMAP_ROOT=1 as_user srun -N1 --container-image="$BB" \
		--no-container-remap-root id -u)" "the command line over PYXIS_CONTAINER_REMAP_ROOT"
	run sh -c "grep -q ' $home ' /proc/self/mounts" || fail "the home is not mounted by default"
	run --container-mount-home sh -c "grep -q ' $home ' /proc/self/mounts" ||
		fail "--container-mount-home: no home"
	run --no-container-mount-home sh -c "! grep -q ' $home ' /proc/self/mounts" ||
		fail "--no-container-mount-home: the home is mounted"
	run --container-remap-root --container-mount-home sh -c "grep -q ' /root ' /proc/self/mounts" ||
		fail "--container-remap-root --container-mount-home: the home is not at /root"
	# pyxis's "PYXIS_CONTAINER_MOUNT_HOME=1" row (the default here too).
	PYXIS_CONTAINER_MOUNT_HOME=1 run --container-remap-root sh -c "grep -q ' /root ' /proc/self/mounts" ||
		fail "PYXIS_CONTAINER_MOUNT_HOME=1 --container-remap-root: the home is not at /root"
	PYXIS_CONTAINER_MOUNT_HOME=0 run sh -c "! grep -q ' $home ' /proc/self/mounts" ||
		fail "PYXIS_CONTAINER_MOUNT_HOME=0: the home is mounted"
	PYXIS_CONTAINER_MOUNT_HOME=1 run --no-container-mount-home sh -c "! grep -q ' $home ' /proc/self/mounts" ||
		fail "--no-container-mount-home over PYXIS_CONTAINER_MOUNT_HOME=1: the home is mounted"
}
behaviour "--[no-]container-remap-root, --[no-]container-mount-home" identity

# pyxis's mount_home.bats with HOME set elsewhere: enroot binds the
# directory $HOME names (at /root with --container-remap-root).
home_var() {
	local alt=$VT/althome
	assert_eq "marker $alt" "$(as_user env HOME="$alt" srun -N1 --container-image="$BB" \
		--container-mount-home sh -c 'cat "$HOME/mark"; echo $HOME' | tr '\n' ' ' | sed 's/ $//')" \
		"--container-mount-home: \$HOME's directory at its path, and HOME"
	assert_eq "marker /root" "$(as_user env HOME="$alt" srun -N1 --container-image="$BB" \
		--container-mount-home --container-remap-root sh -c 'cat /root/mark; echo $HOME' |
		tr '\n' ' ' | sed 's/ $//')" "--container-remap-root: \$HOME's directory at /root"
	as_user env HOME="$alt" srun -N1 --container-image="$BB" sh -c "! grep -q ' $home ' /proc/self/mounts" ||
		fail "the password database's home is bound, not \$HOME's"
	as_user env HOME="$alt" srun -N1 --container-image="$BB" --no-container-mount-home \
		sh -c "test ! -e '$alt/mark'" || fail "--no-container-mount-home: \$HOME is bound"
}
behaviour "the home is the directory \$HOME names (enroot's rule)" home_var

# A site's ctrun.ini defaults ([container] writable, root, no_home,
# entrypoint: enroot.conf's ENROOT_ROOTFS_WRITABLE, ENROOT_REMAP_ROOT,
# ENROOT_MOUNT_HOME) apply unless the user says otherwise: the user's
# choice wins, both ways, as pyxis's does over enroot's configuration.
site_defaults() {
	printf '[container]\nwritable = true\nroot = true\nno_home = true\nentrypoint = true\n' > site.ini
	chmod 644 site.ini
	site() { CTRUN_CONFIG=$TMPD/site.ini as_user srun -N1 "$@"; }
	site --container-image="$BB" touch /newfile || fail "the site's writable = true: not writable"
	run_rc site --container-image="$BB" --container-readonly touch /newfile 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "--container-readonly over the site: $rc $(cat err)"
	PYXIS_CONTAINER_WRITABLE=0 run_rc site --container-image="$BB" touch /newfile 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "WRITABLE=0 over the site: $rc $(cat err)"
	PYXIS_CONTAINER_READONLY=1 run_rc site --container-image="$BB" touch /newfile 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "READONLY=1 over the site: $rc $(cat err)"
	assert_eq 0 "$(site --container-image="$BB" id -u)" "the site's root = true"
	assert_eq "$uid" "$(site --container-image="$BB" --no-container-remap-root id -u)" \
		"--no-container-remap-root over the site"
	site --container-image="$BB" sh -c "! grep -q ' /root ' /proc/self/mounts" ||
		fail "the site's no_home = true: the home is bound"
	site --container-image="$BB" --container-mount-home sh -c "grep -q ' /root ' /proc/self/mounts" ||
		fail "--container-mount-home over the site's no_home: no home"
	# The entrypoint's default is plugstack's execute_entrypoint (false
	# here), pyxis's, whatever ctrun.ini says.
	assert_eq "" "$(site --container-image="$TMPD/env.sqsh" sh -c 'echo $EPVAR')" \
		"ctrun.ini's entrypoint = true is not the plugin's default"
	assert_eq "" "$(site --container-image="$TMPD/env.sqsh" --no-container-entrypoint sh -c 'echo $EPVAR')" \
		"--no-container-entrypoint"
}
behaviour "the user's choice wins over ctrun.ini's defaults" site_defaults

writable() {
	run_rc run touch /newfile 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "read-only by default: $rc $(cat err)"
	run_rc run --container-readonly touch /newfile 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "--container-readonly: $rc"
	run --container-writable sh -c 'touch /newfile && test -f /newfile'
	PYXIS_CONTAINER_WRITABLE=1 as_user srun -N1 --container-image="$BB" touch /newfile
	touch_with() { # VAR=VALUE, srun options...
		local v=$1
		shift
		(export "${v?}" && as_user srun -N1 --container-image="$BB" "$@" touch /newfile)
	}
	run_rc touch_with PYXIS_CONTAINER_WRITABLE=0 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "WRITABLE=0: $rc $(cat err)"
	# pyxis's env_vars.bats "PYXIS_CONTAINER_READONLY=0": writable, unlike
	# the default (and --container-readonly over it).
	touch_with PYXIS_CONTAINER_READONLY=0 || fail "PYXIS_CONTAINER_READONLY=0: not writable"
	run_rc touch_with PYXIS_CONTAINER_READONLY=0 --container-readonly 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err ||
		fail "--container-readonly over READONLY=0: $rc $(cat err)"
	run_rc touch_with PYXIS_CONTAINER_READONLY=1 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err || fail "READONLY=1: $rc $(cat err)"
	run_rc touch_with PYXIS_CONTAINER_WRITABLE=1 --container-readonly 2> err
	[ "$rc" -ne 0 ] && grep -q 'Read-only file system' err ||
		fail "--container-readonly over WRITABLE=1: $rc $(cat err)"
	# Two tasks, one container: what one writes the other sees.
	as_user srun -N1 -n2 --container-writable --container-image="$BB" sh -c \
		'if [ "$SLURM_LOCALID" = 0 ]; then echo x > /shared; else while [ ! -f /shared ]; do sleep 0.1; done; fi'
}
behaviour "--container-writable, read-only by default" writable

entrypoint() {
	local img=(--container-image="$TMPD/env.sqsh")
	assert_eq "" "$(as_user srun -N1 "${img[@]}" sh -c 'echo $EPVAR')" "no entrypoint by default"
	as_user srun -N1 "${img[@]}" --container-entrypoint sh -c 'echo $EPVAR' > out 2> err
	assert_eq "from-entrypoint" "$(cat out)" "--container-entrypoint"
	! grep -q EP-LOG-LINE out err || fail "the entrypoint's output without --container-entrypoint-log"
	as_user srun -N1 "${img[@]}" --container-entrypoint --container-entrypoint-log true > out 2> err
	grep -q EP-LOG-LINE out err || fail "--container-entrypoint-log: no entrypoint output"
	assert_eq "" "$(PYXIS_CONTAINER_ENTRYPOINT=1 as_user srun -N1 "${img[@]}" --no-container-entrypoint \
		sh -c 'echo $EPVAR')" "--no-container-entrypoint over PYXIS_CONTAINER_ENTRYPOINT"
	assert_eq "from-entrypoint" "$(PYXIS_CONTAINER_ENTRYPOINT=1 as_user srun -N1 "${img[@]}" \
		sh -c 'echo $EPVAR')" "PYXIS_CONTAINER_ENTRYPOINT=1"
	PYXIS_CONTAINER_ENTRYPOINT_LOG=1 as_user srun -N1 "${img[@]}" --container-entrypoint true > out 2> err
	grep -q EP-LOG-LINE out err || fail "PYXIS_CONTAINER_ENTRYPOINT_LOG=1: no entrypoint output"
	# =0 is the default here (no execute_entrypoint in plugstack.conf):
	# pyxis's "command line precedence" rows, the option over the variable.
	assert_eq "from-entrypoint" "$(PYXIS_CONTAINER_ENTRYPOINT=0 as_user srun -N1 "${img[@]}" \
		--container-entrypoint sh -c 'echo $EPVAR')" "--container-entrypoint over PYXIS_CONTAINER_ENTRYPOINT=0"
	PYXIS_CONTAINER_ENTRYPOINT_LOG=0 as_user srun -N1 "${img[@]}" --container-entrypoint true > out 2> err
	! grep -q EP-LOG-LINE out err || fail "PYXIS_CONTAINER_ENTRYPOINT_LOG=0: the entrypoint's output"
	PYXIS_CONTAINER_ENTRYPOINT_LOG=0 as_user srun -N1 "${img[@]}" --container-entrypoint \
		--container-entrypoint-log true > out 2> err
	grep -q EP-LOG-LINE out err || fail "--container-entrypoint-log over PYXIS_CONTAINER_ENTRYPOINT_LOG=0"
	# pyxis's entrypoint.bats: the entrypoint starts from the image's
	# environment, and of the host's only --container-env's variables reach
	# it; the tasks keep the job's.
	assert_eq "host host" "$(EPHOST=host as_user srun -N1 "${img[@]}" --container-entrypoint \
		--container-env=EPHOST sh -c 'echo $EPSAW $EPHOST')" "--container-env=EPHOST in the entrypoint"
	assert_eq "none host from-entrypoint image" "$(EPHOST=host as_user srun -N1 "${img[@]}" \
		--container-entrypoint sh -c 'echo $EPSAW $EPHOST $EPVAR $FOO')" \
		"a host variable not named: not in the entrypoint, in the task"
}
behaviour "--container-entrypoint, --container-entrypoint-log" entrypoint

save() {
	as_user srun -N1 --container-image="$BB" --container-save="$TMPD/saved.sqsh" sh -c 'echo pyxis > /test'
	assert_eq pyxis "$(as_user srun -N1 --container-image="$TMPD/saved.sqsh" cat /test)" "the saved image"
	PYXIS_CONTAINER_SAVE=./env-saved.sqsh as_user srun -N1 --container-image="$BB" sh -c 'echo env > /t2'
	assert_eq env "$(as_user srun -N1 --container-image=./env-saved.sqsh cat /t2)" "PYXIS_CONTAINER_SAVE"
	# Saved over the image the step runs from (pyxis's squashfs_image.bats).
	as_user srun -N1 --container-image="$TMPD/saved.sqsh" --container-save="$TMPD/saved.sqsh" \
		sh -c 'echo slurm > /test2'
	assert_eq "pyxis slurm" "$(as_user srun -N1 --container-image="$TMPD/saved.sqsh" cat /test /test2 |
		tr '\n' ' ' | sed 's/ $//')" "saved over its own image"
	PYXIS_CONTAINER_SAVE=./env2.sqsh as_user srun -N1 --container-image="$BB" --container-save=./cli.sqsh \
		sh -c 'echo cli > /t3'
	assert_eq cli "$(as_user srun -N1 --container-image=./cli.sqsh cat /t3)" "--container-save over the variable"
	[ ! -e env2.sqsh ] || fail "PYXIS_CONTAINER_SAVE was written under --container-save"
}
behaviour "--container-save" save

image_var_and_runtime() {
	assert_eq "$uid" "$(PYXIS_CONTAINER_IMAGE="$BB" as_user srun -N1 sh -c 'test ! -e /usr/bin/python3 && id -u')" \
		"PYXIS_CONTAINER_IMAGE"
	assert_eq "$uid" "$(as_user srun -N1 --container-image="$BB" --container-runtime=oci id -u)" \
		"--container-runtime=oci"
	run_rc as_user srun -N1 --container-image="$BB" --container-runtime=bogus true 2> err
	assert_eq 125 "$rc" "--container-runtime=bogus"
	grep -q bogus err || fail "no line naming the runtime: $(cat err)"
}
behaviour "PYXIS_CONTAINER_IMAGE, --container-runtime" image_var_and_runtime

host_env() {
	local img=(--container-image="$TMPD/env.sqsh")
	assert_eq "image" "$(PYXIS_CONTAINER_IMAGE="$BB" as_user srun -N1 "${img[@]}" sh -c 'echo $FOO')" \
		"--container-image over PYXIS_CONTAINER_IMAGE"
	# pyxis drops the host's LANG (a locale the image may not have) unless
	# --container-env names it.
	assert_eq "" "$(LANG=C.UTF-8 as_user srun -N1 "${img[@]}" sh -c 'echo $LANG')" "the host's LANG"
	assert_eq "C.UTF-8" "$(LANG=C.UTF-8 as_user srun -N1 "${img[@]}" --container-env=LANG \
		sh -c 'echo $LANG')" "--container-env=LANG"
	assert_eq "only-in-image" "$(as_user srun -N1 "${img[@]}" ctrun-only-in-image)" \
		"a command only in the image's PATH"
}
behaviour "the host's environment, a command only in the image (env.bats, path.bats)" host_env

host_namespaces() {
	local node=${NODES[0]} ns want got
	for ns in net ipc uts; do
		want=$("$CLUSTER" exec "$node" readlink "/proc/self/ns/$ns")
		got=$(as_user srun -N1 -w "$node" --container-image="$BB" readlink "/proc/self/ns/$ns")
		assert_eq "$want" "$got" "the $ns namespace without --container-unshare"
	done
}
behaviour "no --container-unshare: the node's network, IPC and UTS namespaces" host_namespaces

# pyxis's unshare.bats: namespaces of the container's own, shared by the
# step's tasks on the node: the network's only interface the loopback, up;
# a host name root can change, the node's unchanged; a /dev/shm of its own.
unshared() {
	local node=${NODES[0]} out want="" ns f=ctrun-it-shm-$$
	out=$(as_user srun -N1 -w "$node" --ntasks-per-node=2 --container-image="$BB" \
		--container-unshare=net,ipc,uts sh -c 'echo $(readlink /proc/self/ns/net) \
		$(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/uts)')
	assert_eq 1 "$(sort -u <<<"$out" | wc -l)" "the 2 tasks' namespaces are one container's: $out"
	for ns in net ipc uts; do want+="$("$CLUSTER" exec "$node" readlink "/proc/self/ns/$ns") "; done
	for i in 1 2 3; do
		[ "$(awk -v i="$i" 'NR == 1 { print $i }' <<<"$out")" != "$(cut -d' ' -f"$i" <<<"$want")" ] ||
			fail "namespace $i is the node's: $out / $want"
	done
	assert_eq "lo 1" "$(as_user srun -N1 --container-image="$BB" --container-unshare=net sh -c \
		'echo $(awk -F: "NR > 2 { print \$1 }" /proc/net/dev) $(ip link show lo | grep -c "[<,]UP[,>]")')" \
		"the network: the loopback alone, up"
	assert_eq "ctrun-it-uts" "$(as_user srun -N1 -w "$node" --container-image="$BB" --container-remap-root \
		--container-unshare=uts sh -c 'hostname ctrun-it-uts && hostname')" "a host name of its own"
	assert_eq "$("$CLUSTER" exec "$node" hostname)" "$(as_user srun -N1 -w "$node" --container-image="$BB" \
		hostname)" "the node's host name after it"
	as_user srun -N1 -w "$node" --container-image="$BB" --container-unshare=ipc sh -c "touch /dev/shm/$f"
	! "$CLUSTER" exec "$node" test -e "/dev/shm/$f" ||
		{ "$CLUSTER" exec "$node" rm -f "/dev/shm/$f"; fail "--container-unshare=ipc wrote the node's /dev/shm"; }
	as_user srun -N1 -w "$node" --container-image="$BB" sh -c "touch /dev/shm/$f"
	"$CLUSTER" exec "$node" test -e "/dev/shm/$f" || fail "without it, /dev/shm is the node's"
	"$CLUSTER" exec "$node" rm -f "/dev/shm/$f"
	[ "$(PYXIS_CONTAINER_UNSHARE=net as_user srun -N1 -w "$node" --container-image="$BB" \
		readlink /proc/self/ns/net)" != "$(cut -d' ' -f1 <<<"$want")" ] || fail "PYXIS_CONTAINER_UNSHARE=net"
}
behaviour "--container-unshare=net,ipc,uts, PYXIS_CONTAINER_UNSHARE (unshare.bats)" unshared

concurrent() {
	local a b
	as_user srun -N1 --container-image="$TMPD/env.sqsh" sh -c 'echo $FOO' > c1 &
	a=$!
	as_user srun -N1 --container-image="$TMPD/env.sqsh" sh -c 'echo $FOO' > c2 &
	b=$!
	wait "$a" || fail "the first of two concurrent steps failed"
	wait "$b" || fail "the second of two concurrent steps failed"
	assert_eq "image image" "$(cat c1 c2 | tr '\n' ' ' | sed 's/ $//')" "both steps in the image"
}
behaviour "two steps of one image at once" concurrent

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
