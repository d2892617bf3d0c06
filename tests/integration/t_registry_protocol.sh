#!/bin/bash
# The distribution protocol against a real registry (Debian's
# docker-registry): Bearer tokens from the suite's token issuer (one token
# for a whole pull), a multi-platform index (this node's platform picked,
# the index digest recorded), a pull pinned by digest that needs no
# network, a download interrupted before and resumed with a Range, and a
# registry that serves other bytes than its manifest names (refused,
# nothing published, nothing left in the store's tmp/).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
cd "$TMPD"
unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR ENROOT_CONFIG_PATH
export HOME=$TMPD/home CTRUN_REGISTRY_STORE=$TMPD/store
mkdir -p "$HOME/.config/containers"
auth() { # the current registry's user in auth.json
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" \
		"$(printf '%s:%s' "$REG_USER" "$REG_PASSWORD" | base64 -w0)" > "$HOME/.config/containers/auth.json"
	chmod 600 "$HOME/.config/containers/auth.json"
}
blob_file() { # DIGEST: its data file in a registry storage
	echo "$1/docker/registry/v2/blobs/sha256/${2:7:2}/${2#sha256:}/data"
}

# Each registry is started and stopped at the top level (its cleanup is the EXIT
# trap's); what several behaviours need is set up there too.
reg_start --storage "$STORAGE" --auth token
auth
export CTRUN_REGISTRY_CA_FILE=$REG_CA

token_auth() {
	run_rc "$CTRUN" -v pull "docker://$REG_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull with token auth"
	reg_token_requests
	assert_eq 1 "$(reg_token_requests | grep -c '^200 ')" "tokens issued for one pull"
	assert_eq 3 "$(reg_requests | grep -cE '^GET /v2/ctrun-test/busybox/blobs/sha256:[0-9a-f]{64} 200$')" \
		"blob GETs (config and two layers)"
}
behaviour "token auth: one token for the manifest and every blob" token_auth

# The index's digest and this node's platform in it (the next two behaviours').
idx=$(reg_digest ctrun-test/busybox:multiarch)
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:multiarch" > index.json
arch=$("$PY" -c 'import platform; m = platform.machine(); print({"x86_64": "amd64", "aarch64": "arm64"}.get(m, m))')
plat=$("$PY" - "$arch" <<'PYEOF'
import json, sys
for m in json.load(open("index.json"))["manifests"]:
    if m["platform"]["architecture"] == sys.argv[1]:
        print(m["digest"])
PYEOF
)
[ -n "$plat" ] || fail "the test index has no $arch image"

index() {
	run_rc "$CTRUN" -v pull "docker://$REG_HOST/ctrun-test/busybox:multiarch" > out 2> err
	cat err
	assert_eq 0 "$rc" "pull of the index"
	assert_eq "$TMPD/store/images/sha256-${plat#sha256:}.sqsh" "$(cat out)" "the image pulled from the index"
	assert_eq "$plat" "$(cat "store/refs/$REG_HOST/ctrun-test/busybox/multiarch")" "the tag's record"
}
behaviour "an index: this node's platform" index

pinned() {
	run_rc "$CTRUN" -q pull "docker://$REG_HOST/ctrun-test/busybox@$idx" > out
	assert_eq 0 "$rc" "pull by index digest"
	assert_eq "$TMPD/store/images/sha256-${plat#sha256:}.sqsh" "$(cat out)" "the image of the index digest"
	before=$(reg_requests | wc -l)
	run_rc "$CTRUN" -q pull "docker://$REG_HOST/ctrun-test/busybox@$idx" > out
	assert_eq 0 "$rc" "pull by index digest again"
	assert_eq "$before" "$(reg_requests | wc -l)" "requests made for a digest the store holds"
}
behaviour "pinned by the index digest: pulled once, then no request at all" pinned

# Issue 29.10: enroot's .credentials may hold an entry for a token realm's
# host alone (authn.nvidia.com).  The registry names the realm; one that
# names another host's token service must not get a token of the user's
# from it.  Here the registry is reached as $REG_NAME (a host name) and its
# realm lives at $REG_ADDR (another name for the host, as another registry's
# token service would be); the user's only entry is the realm's host.
realm_creds() { # HOST-TO-PULL STORE: a pull with the realm's host's entry alone
	mkdir -p "$TMPD/enroot"
	printf 'machine %s login %s password %s\n' "$REG_ADDR" "$REG_USER" "$REG_PASSWORD" > "$TMPD/enroot/.credentials"
	chmod 600 "$TMPD/enroot/.credentials"
	# On a node: $REG_NAME resolves there (the machine's /etc/hosts is not touched).
	run_rc env HOME="$TMPD/nohome" ENROOT_CONFIG_PATH="$TMPD/enroot" CTRUN_REGISTRY_STORE="$TMPD/$2" \
		srun -N1 "$CTRUN" pull "docker://$1/ctrun-test/busybox:latest" > out 2> err
	cat err
}
realm_other_host() {
	local before
	before=$(reg_token_requests | grep -c " $REG_USER " || true)
	realm_creds "$REG_NAME" store-realm1
	assert_eq 125 "$rc" "a pull whose realm is another host's, with that host's entry alone"
	assert_eq "$before" "$(reg_token_requests | grep -c " $REG_USER " || true)" \
		"token requests that carried the user's credentials"
	grep -q "token realm's host is not sent" err || fail "the error does not say why no credentials went"
	assert_eq 1 "$(grep -vc "^srun: " err)" "lines of the error (srun adds its own)"
}
behaviour "a token realm on another host: its host's credentials are not sent" realm_other_host

realm_same_host() {
	realm_creds "$REG_HOST" store-realm2
	assert_eq 0 "$rc" "a pull whose realm is on the registry's host (another port)"
	reg_token_requests | grep -q "^200 $REG_USER " || fail "no token for the user"
}
behaviour "a token realm on the registry's own host: the host's entry is used" realm_same_host

# Issue 29.11: [registry] auth_file is read as the other credentials files:
# a FIFO there (another user's, or a mistake) must not hang the pull.
auth_file_fifo() {
	mkfifo "$TMPD/auth.fifo"
	run_rc timeout 20 env CTRUN_REGISTRY_AUTH_FILE="$TMPD/auth.fifo" CTRUN_REGISTRY_STORE="$TMPD/store-fifo" \
		"$CTRUN" pull "docker://$REG_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
	[ "$rc" != 124 ] || fail "the pull hung on a FIFO as [registry] auth_file"
	grep -q "auth_file: $TMPD/auth.fifo is not a regular file" err || fail "the FIFO is not named"
	rm -f "$TMPD/auth.fifo"
}
behaviour "[registry] auth_file a FIFO: said, never opened to block" auth_file_fifo
reg_stop

reg_start --storage "$STORAGE"
auth
export CTRUN_REGISTRY_CA_FILE=$REG_CA CTRUN_REGISTRY_STORE=$TMPD/store-resume
# The first layer (this behaviour's and the next one's).
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:latest" > manifest.json
layer=$("$PY" -c 'import json; print(json.load(open("manifest.json"))["layers"][0]["digest"])')

resume() {
	size=$(stat -c %s "$(blob_file "$STORAGE" "$layer")")
	half=$((size / 2))
	mkdir -p store-resume/tmp
	head -c "$half" "$(blob_file "$STORAGE" "$layer")" > "store-resume/tmp/${layer#sha256:}.part"
	run_rc "$CTRUN" -v pull "docker://$REG_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
	assert_eq 0 "$rc" "the resumed pull"
	grep -q "resuming at byte $half" err || fail "the partial download was not resumed"
	reg_requests | grep -qE "^GET /v2/ctrun-test/busybox/blobs/$layer 206$" ||
		fail "no ranged GET (206) of the layer"
	cmp -s "$(blob_file "$STORAGE" "$layer")" "store-resume/blobs/sha256/${layer#sha256:}" ||
		fail "the resumed blob differs from the registry's"
	[ -z "$(ls store-resume/tmp)" ] || fail "store tmp/ not empty: $(ls store-resume/tmp)"
}
behaviour "a download interrupted by an earlier pull: resumed with a Range" resume
reg_stop

# A registry whose storage has one byte of the layer changed.
cp -a "$STORAGE" bad-storage
f=$(blob_file bad-storage "$layer")
printf 'X' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
reg_start --storage "$TMPD/bad-storage"
auth
export CTRUN_REGISTRY_CA_FILE=$REG_CA CTRUN_REGISTRY_STORE=$TMPD/store-bad

bad_bytes() {
	run_rc "$CTRUN" pull "docker://$REG_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
	assert_eq 125 "$rc" "a pull of a corrupted blob"
	grep -q "digest mismatch" err || fail "the mismatch is not named"
	[ ! -e "store-bad/blobs/sha256/${layer#sha256:}" ] || fail "the corrupted blob was kept"
	[ -z "$(ls store-bad/images)" ] || fail "an image was published"
	[ -z "$(ls store-bad/tmp)" ] || fail "store tmp/ not empty: $(ls store-bad/tmp)"
}
behaviour "a registry that serves other bytes than its manifest names" bad_bytes
