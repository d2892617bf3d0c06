#!/bin/bash
# ctrun pull and --image docker:// against a real registry: Debian's
# docker-registry with TLS (the test's own CA) and htpasswd Basic auth, on
# the test cluster's bridge, serving the test images (reglib.sh).  Each
# credentials source in turn, the errors a user meets (no credentials, a
# wrong password, an unknown CA, a missing tag, a missing file that looks
# like a reference), a run on both nodes from the reference, an
# unprivileged user's own store, and a run from the store once the
# registry is gone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
need_image busybox busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
reg_start --storage "$STORAGE"
export CTRUN_REGISTRY_CA_FILE=$REG_CA CTRUN_REGISTRY_STORE=$TMPD/store
unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR ENROOT_CONFIG_PATH
ref=docker://$REG_HOST/ctrun-test/busybox:latest
want=$(reg_digest ctrun-test/busybox:latest)
b64=$(printf '%s:%s' "$REG_USER" "$REG_PASSWORD" | base64 -w0)
# The path of the image the pull with auth.json puts in the store (later behaviours use it).
sqsh=$TMPD/store/images/sha256-${want#sha256:}.sqsh
mkdir -p nohome

no_creds() {
	run_rc env HOME="$TMPD/nohome" "$CTRUN" pull "$ref" > out 2> err
	cat err
	assert_eq 125 "$rc" "pull without credentials"
	assert_eq 1 "$(wc -l < err)" "lines of the error"
	grep -q "no credentials" err || fail "the error does not say none were found"
	grep -q "auth.json" err || fail "the error does not say where credentials go"
	[ -z "$(ls store/images 2>/dev/null)" ] || fail "an image was published after a refused pull"
}
behaviour "no credentials anywhere: one line that says so and where they go, nothing published" no_creds

containers_auth() {
	mkdir -p home/.config/containers
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" "$b64" > home/.config/containers/auth.json
	chmod 600 home/.config/containers/auth.json
	run_rc env HOME="$TMPD/home" "$CTRUN" -v pull "$ref" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull with auth.json"
	grep -q "credentials for $REG_HOST: $TMPD/home/.config/containers/auth.json" err ||
		fail "-v does not name the credentials used"
	sqsh=$(cat out)
	assert_eq "$TMPD/store/images/sha256-${want#sha256:}.sqsh" "$sqsh" "the pulled image's path"
	# The listing whole first: grep -q ending the pipe early would kill
	# unsquashfs with SIGPIPE, a failure under pipefail.
	unsquashfs -l "$sqsh" > listing
	grep -q 'squashfs-root/etc/environment' listing || fail "no /etc/environment in the image"
	assert_eq "$want" "$(cat "store/refs/$REG_HOST/ctrun-test/busybox/latest")" "the tag's record"
	# Both layers, the second over the first: its file, its whiteout of a file
	# of the first, its opaque directory.
	unsquashfs -l "$sqsh" > list
	grep -qx 'squashfs-root/etc/layer2' list || fail "the second layer's file is missing"
	grep -qx 'squashfs-root/opt/old/b' list || fail "the opaque directory's new file is missing"
	grep -qx 'squashfs-root/etc/deleted-by-layer2' list && fail "a file whited out by layer 2 is there"
	grep -q '^squashfs-root/opt/old/a' list && fail "the opaque directory kept layer 1's files"
	grep -qx 'squashfs-root/bin/busybox' list || fail "the first layer is missing"
	if grep -q "credentials for" err && grep -q "$REG_PASSWORD" err; then fail "the password was printed"; fi
}
behaviour "containers' auth.json: pulled, -v names the file, the image is the registry's digest" containers_auth

tty_progress() {
	script -qec "env HOME='$TMPD/home' CTRUN_REGISTRY_STORE='$TMPD/store-tty' '$CTRUN' pull '$ref'" \
		/dev/null > tty.out < /dev/null
	grep -qE "pulling $REG_HOST/ctrun-test/busybox:latest: 100% \([0-9]+/[0-9]+ MB, [0-9]+ MB/s\)" tty.out ||
		fail "no progress on a tty: $(cat -v tty.out)"
	# err: the pull of the behaviour before, without a tty.
	if grep -q "pulling .*%" err; then fail "progress without a tty"; fi
}
behaviour "on a tty, a progress line like docker pull's: percent, bytes, rate; none without" tty_progress

wrong_password() {
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" "$(printf '%s:wrong' "$REG_USER" | base64 -w0)" \
		> home/.config/containers/auth.json
	run_rc env HOME="$TMPD/home" CTRUN_REGISTRY_STORE="$TMPD/store2" "$CTRUN" pull "$ref" > out 2> err
	cat err
	assert_eq 125 "$rc" "pull with a wrong password"
	grep -q "$TMPD/home/.config/containers/auth.json" err || fail "the refusal does not name the source"
}
behaviour "a wrong password: refused, naming the source" wrong_password

docker_config() {
	rm home/.config/containers/auth.json
	mkdir -p home/.docker
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" "$b64" > home/.docker/config.json
	chmod 644 home/.docker/config.json
	run_rc env HOME="$TMPD/home" CTRUN_REGISTRY_STORE="$TMPD/store3" "$CTRUN" -v pull "$ref" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull with docker's config.json"
	grep -q "credentials for $REG_HOST: $TMPD/home/.docker/config.json" err || fail "config.json not named"
	grep -q "warning: .*config.json.* readable by others" err || fail "no warning for a readable file"
}
behaviour "docker's config.json, readable by others: a warning, and the pull works" docker_config

enroot_credentials() {
	rm home/.docker/config.json
	mkdir -p enroot
	printf 'machine %s login %s password $REG_TEST_PW\n' "${REG_HOST%:*}" "$REG_USER" > enroot/.credentials
	chmod 600 enroot/.credentials
	run_rc env HOME="$TMPD/home" ENROOT_CONFIG_PATH="$TMPD/enroot" REG_TEST_PW="$REG_PASSWORD" \
		CTRUN_REGISTRY_STORE="$TMPD/store4" "$CTRUN" -v pull "$ref" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull with enroot's .credentials"
	grep -q "credentials for $REG_HOST: $TMPD/enroot/.credentials" err || fail ".credentials not named"
}
behaviour "enroot's .credentials with a \$VAR password" enroot_credentials

unknown_ca() {
	run_rc env -u CTRUN_REGISTRY_CA_FILE HOME="$TMPD/home" CTRUN_REGISTRY_STORE="$TMPD/store5" \
		"$CTRUN" pull "$ref" > out 2> err
	cat err
	assert_eq 125 "$rc" "pull with an unknown CA"
	grep -q "ca_file" err || fail "the TLS error does not name [registry] ca_file"
}
behaviour "a CA that is not trusted: the TLS error names the setting" unknown_ca

# From here on docker's config.json in $TMPD/home, 0600, holds the credentials.
mkdir -p home/.docker
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" "$b64" > home/.docker/config.json
chmod 600 home/.docker/config.json
export HOME=$TMPD/home

missing_tag() {
	run_rc "$CTRUN" pull "docker://$REG_HOST/ctrun-test/busybox:nosuchtag" > out 2> err
	cat err
	assert_eq 125 "$rc" "pull of a missing tag"
	grep -q "ctrun-test/busybox:nosuchtag: not found on $REG_HOST" err || fail "404 not named"
}
behaviour "a tag that does not exist: named with its host" missing_tag

missing_file() {
	run_rc "$CTRUN" --image "$REG_HOST/ctrun-test/busybox:latest" -- true 2> err
	cat err
	assert_eq 125 "$rc" "--image without docker://"
	grep -q "write docker://$REG_HOST/ctrun-test/busybox:latest" err || fail "no hint"
}
behaviour "a missing file written like a reference: how to write one" missing_file

# Issue 29.1: docker://HOST/REPO:TAG is also the relative path docker:/HOST/REPO:TAG.
# Another user who can write the directory root runs from plants their own
# image under that name; root's --image docker://... must pull, never run it.
planted_path() {
	local shared=$TMPD/shared planted
	mkdir -p "$shared" && chmod 1777 "$shared"
	planted=$shared/docker:/$REG_HOST/ctrun-test/busybox:latest
	unsquashfs -q -d "$TMPD/planted-root" "$busybox" >/dev/null
	echo planted > "$TMPD/planted-root/planted"
	mksquashfs "$TMPD/planted-root" "$TMPD/planted.sqsh" -quiet -no-progress >/dev/null
	rm -rf "$TMPD/planted-root"
	chmod 644 "$TMPD/planted.sqsh"
	su "$user" -s /bin/bash -c "set -e; umask 022; cd '$shared'
		mkdir -p '${planted%/*}'; cp '$TMPD/planted.sqsh' '$planted'"
	[ -f "$planted" ] || fail "the planted image was not made"
	run_rc sh -c "cd '$shared' && exec '$CTRUN' --image '$ref' -- sh -c 'cat /planted 2>/dev/null; echo \$CTRUN_IMAGE_ENV'" > out 2> err
	cat out err
	assert_eq 0 "$rc" "a run of the reference from a directory holding its name"
	if grep -q planted out; then fail "the planted file ran as root's image"; fi
	grep -qx busybox out || fail "the registry's image did not run"
	# The file itself is still reachable, written as a path.
	run_rc sh -c "cd '$shared' && exec '$CTRUN' --image './docker:/$REG_HOST/ctrun-test/busybox:latest' -- cat /planted" > out 2> err
	assert_eq 0 "$rc" "the planted file run as ./docker:..."
	assert_eq planted "$(cat out)" "the file run by its path"
	rm -rf "$shared"
}
behaviour "a file named like the reference in the working directory: the reference wins, ./docker:... reaches the file" planted_path

both_nodes() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$ref" -- sh -c 'echo "$(hostname) $CTRUN_IMAGE_ENV"' > out
	cat out
	assert_eq 0 "$rc" "srun -N2 from the reference"
	assert_eq "2" "$(grep -c ' busybox$' out)" "nodes that ran the image"
}
behaviour "--image docker:// on both nodes (the store on the shared file system)" both_nodes

copy_o() {
	run_rc "$CTRUN" -q pull "$ref" -o "$TMPD/copy.sqsh" > out
	assert_eq 0 "$rc" "pull -o"
	cmp -s "$TMPD/copy.sqsh" "$sqsh" || fail "-o is not the store's image"
	run_rc "$CTRUN" -q pull "$ref" -o "$TMPD/copy.sqsh" 2> err
	assert_eq 2 "$rc" "pull -o onto an existing file"
}
behaviour "-o FILE.sqsh: a copy, as enroot import -o" copy_o

mirror() {
	run_rc env CTRUN_REGISTRY_MIRROR="origin.invalid=$REG_HOST" CTRUN_REGISTRY_STORE="$TMPD/store6" \
		"$CTRUN" -v pull docker://origin.invalid/ctrun-test/busybox:latest > out 2> err
	cat err
	assert_eq 0 "$rc" "pull through the mirror"
	grep -q "origin.invalid: trying the mirror $REG_HOST first" err || fail "the mirror is not said"
	assert_eq "$TMPD/store6/images/sha256-${want#sha256:}.sqsh" "$(cat out)" "the image from the mirror"

	run_rc env CTRUN_REGISTRY_MIRROR="$REG_HOST=127.0.0.1:1" CTRUN_REGISTRY_STORE="$TMPD/store7" \
		"$CTRUN" pull "$ref" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull with a mirror that does not answer"
	grep -q "mirror of $REG_HOST failed .*; asking $REG_HOST" err || fail "the fallback is not said"
}
behaviour "a mirror: asked first; an origin that does not even resolve is never needed" mirror

unprivileged() {
	cp home/.docker/config.json "$TMPD/user-config.json"
	chown "$user" "$TMPD/user-config.json"
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' \
		CTRUN_REGISTRY_AUTH_FILE='$TMPD/user-config.json' CTRUN_REGISTRY_CA_FILE='$REG_CA' \
		CTRUN_REGISTRY_STORE='$TMPD/ustore' srun -N1 '$CTRUN' --image '$ref' -- id -u" > out
	assert_eq 0 "$rc" "a run from the reference as $user"
	assert_eq "$user" "$(stat -c %U "$TMPD/ustore/images/sha256-${want#sha256:}.sqsh")" "owner of the user's image"
	assert_eq 700 "$(stat -c %a "$TMPD/ustore")" "mode of the user's store"
}
behaviour "an unprivileged user: its own store, 0700, its files" unprivileged

# The registry stopped at the top level (its own cleanup), for the behaviours after.
reg_stop

registry_gone() {
	run_rc "$CTRUN" --image "$ref" -- cat /etc/environment > out 2> err
	cat err
	assert_eq 0 "$rc" "a run with the registry gone"
	grep -q "registry not reachable.*using the image pulled before, $want" err || fail "offline not said"
	grep -q CTRUN_IMAGE_ENV=busybox out || fail "the image did not run"
	assert_no_containers
}
behaviour "the registry gone: the image pulled before, said in one line" registry_gone

cache() {
	run_rc "$CTRUN" cache list > out
	cat out
	assert_eq 0 "$rc" "cache list"
	grep -qE "^${want:0:19} .* $REG_HOST/ctrun-test/busybox:latest" out || fail "the pulled image is not listed"
	[ -n "$(ls store/blobs/sha256)" ] || fail "no layers in the store before gc"
	run_rc "$CTRUN" cache gc --budget 100G > out
	assert_eq 0 "$rc" "cache gc"
	[ -z "$(ls store/blobs/sha256)" ] || fail "gc left the store's layers"
	[ -f "$sqsh" ] || fail "gc removed a pulled image"
	run_rc "$CTRUN" cache remove "$ref"
	assert_eq 0 "$rc" "cache remove of the reference"
	[ ! -e "$sqsh" ] || fail "the image is still in the store"
	[ ! -e "store/refs/$REG_HOST/ctrun-test/busybox/latest" ] || fail "the tag's record is still there"
}
behaviour "ctrun cache list, gc and remove cover the image store" cache
