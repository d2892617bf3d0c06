#!/bin/bash
# What an admin installs: `make install PREFIX=/usr/local DESTDIR=D` and
# `make uninstall`, then the Debian package (`make deb`: dpkg-buildpackage)
# installed with apt, each run against the test cluster from where it was
# installed (the helpers found in PREFIX/libexec/ctrun, the manual pages
# readable by man, the completion and hooks.d file in place), then removed
# leaving nothing behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
cd "$TMPD"
[ ! -e /usr/bin/ctrun ] || fail "/usr/bin/ctrun exists before the test: a ctrun package is installed here"

# A run of the installed ctrun on both nodes, in a container (so the agent
# comes from libexec): every rank reports.
run_installed() { # ctrun-path what
	run_rc srun -N2 --ntasks-per-node=1 "$1" -q --no-prefix --image "$BB" --nproc-per-node 2 -- \
		sh -c 'echo "rank $RANK"' > run.out 2> run.err
	cat run.err
	assert_eq 0 "$rc" "$2: srun -N2 ctrun --image"
	assert_eq "rank 0;rank 1;rank 2;rank 3;" "$(sort run.out | tr '\n' ';')" "$2: the ranks"
}

make_install() {
	local d=$TMPD/root p=/usr/local f left
	make -s -C "$CTRUN_REPO" --no-print-directory install DESTDIR="$d" PREFIX=$p > install.log 2>&1 ||
		fail "make install: $(tail -5 install.log)"
	for f in bin/ctrun bin/ctrun-hook libexec/ctrun/ctrun-agent libexec/ctrun/ctrun-worker \
		share/man/man1/ctrun.1 share/man/man5/ctrun.ini.5 share/man/man8/ctrun-hook.8 \
		share/bash-completion/completions/ctrun share/containers/oci/hooks.d/ctrun-hook.json \
		share/doc/ctrun/ctrun.ini lib/slurm/spank_ctrun.so share/ctrun/spank_ctrun.conf; do
		[ -f "$d$p/$f" ] || fail "make install did not install $p/$f"
	done
	assert_eq "required $p/lib/slurm/spank_ctrun.so ctrun=$p/bin/ctrun" \
		"$(grep -v '^#' "$d$p/share/ctrun/spank_ctrun.conf")" "the SPANK plugin's plugstack line"
	[ ! -e "$d$p/bin/ctrun-agent" ] || fail "the agent is in bin, not libexec"
	grep -q "\"$p/bin/ctrun-hook\"" "$d$p/share/containers/oci/hooks.d/ctrun-hook.json" ||
		fail "hooks.d names another ctrun-hook: $(cat "$d$p/share/containers/oci/hooks.d/ctrun-hook.json")"
	man -l "$d$p/share/man/man1/ctrun.1" 2> /dev/null | grep -q 'ctrun - container-aware job runner' ||
		fail "man cannot read the installed ctrun(1)"
	man -l "$d$p/share/man/man5/ctrun.ini.5" 2> /dev/null | grep -q 'kill_timeout = 3' ||
		fail "ctrun.ini(5) lacks kill_timeout"
	run_installed "$d$p/bin/ctrun" "make install"
	make -s -C "$CTRUN_REPO" --no-print-directory uninstall DESTDIR="$d" PREFIX=$p > /dev/null 2>&1 ||
		fail "make uninstall failed"
	left=$(find "$d" -type f)
	[ -z "$left" ] || fail "make uninstall left: $left"
}
behaviour "make install DESTDIR, then uninstall" make_install

# The package is purged at the file's exit, whatever the behaviour did (the
# trap is the file's, not the behaviour's subshell's).
purge() { apt-get purge -y -qq ctrun > /dev/null 2>&1 || true; }
trap 'purge; cleanup_tmp' EXIT
deb_package() {
	local deb f
	make -s -C "$CTRUN_REPO" --no-print-directory deb > deb.log 2>&1 || fail "make deb: $(tail -5 deb.log)"
	deb=$(ls "$CTRUN_REPO"/build/deb/ctrun_*_*.deb)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" > apt.log 2>&1 ||
		fail "apt-get install $deb: $(tail -5 apt.log)"
	assert_eq "ctrun $(dpkg-query -W -f '${Version}' ctrun)" "$(/usr/bin/ctrun --version | head -1)" \
		"the installed version"
	assert_eq /usr/share/man/man1/ctrun.1.gz "$(man -w ctrun)" "man -w ctrun"
	man ctrun-hook 2> /dev/null | grep -q 'createContainer' || fail "man ctrun-hook"
	[ -x /usr/libexec/ctrun/ctrun-agent ] || fail "no /usr/libexec/ctrun/ctrun-agent"
	[ -f /usr/share/bash-completion/completions/ctrun ] || fail "no completion installed"
	[ -f "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm/spank_ctrun.so" ] ||
		fail "no SPANK plugin in the package"
	grep -q "^required /usr/lib/.*/slurm/spank_ctrun.so ctrun=/usr/bin/ctrun" \
		/usr/share/ctrun/spank_ctrun.conf || fail "the package's plugstack line"
	run_installed /usr/bin/ctrun "the package"
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq ctrun > apt.log 2>&1 || fail "apt-get purge: $(tail -5 apt.log)"
	for f in /usr/bin/ctrun /usr/bin/ctrun-hook /usr/libexec/ctrun /usr/share/man/man1/ctrun.1.gz \
		/usr/share/bash-completion/completions/ctrun /usr/share/containers/oci/hooks.d/ctrun-hook.json \
		/usr/share/ctrun; do
		[ ! -e "$f" ] || fail "$f is still there after apt-get purge"
	done
}
behaviour "make deb, installed with apt, run, removed" deb_package
