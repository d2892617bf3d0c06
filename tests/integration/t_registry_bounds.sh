#!/bin/bash
# What a hostile registry may make a pull cost (issue 29, point 9): the
# manifest's sizes are checked before anything is downloaded.  The test's
# own registry (writable, TLS, basic auth) serves busybox and manifests
# whose blobs are the real ones with other sizes declared (the registry
# checks that a manifest's blobs exist, not their sizes): a layer of
# 100 GiB (over [cache] max_unpacked's 64 GiB), one of 900 GiB with no
# max_unpacked (more than the store's file system has free), a config of
# 17 MiB (over the 16 MiB a config may be); and the real image under a
# max_unpacked smaller than its layers.  Each is refused in one line (exit
# 125) before a single blob request.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
need_image ARCHIVE busybox-docker.tar
cd "$TMPD"
reg_start
reg_push "$ARCHIVE" ctrun-test/busybox:latest
reg_client "$TMPD/auth.json"
export CTRUN_REGISTRY_STORE=$TMPD/store HOME=$TMPD
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:latest" > manifest.json

# declare TAG PYTHON-EXPR: the manifest with `m` changed by the expression,
# put as TAG.
declare_as() {
	"$PY" - "$2" > "$1.json" <<'EOF'
import json, sys
m = json.load(open("manifest.json"))
exec(sys.argv[1])
print(json.dumps(m), end="")
EOF
	reg_curl "/v2/ctrun-test/busybox/manifests/$1" -f -o /dev/null -u "$REG_USER:$REG_PASSWORD" \
		-X PUT -H "Content-Type: $("$PY" -c 'import json; print(json.load(open("manifest.json"))["mediaType"])')" \
		--data-binary "@$1.json" || fail "the registry refused the manifest $1"
}
declare_as huge 'm["layers"][0]["size"] = 100 << 30'
declare_as nodisk 'm["layers"][0]["size"] = 900 << 30'
declare_as bigconfig 'm["config"]["size"] = 17 << 20'

# refused_early TAG MESSAGE [ENV...]: one line saying MESSAGE, exit 125, no blob asked for.
refused_early() {
	local tag=$1 msg=$2
	shift 2
	: > "$REG_ACCESS_LOG"
	run_rc env "$@" "$CTRUN" pull "docker://$REG_HOST/ctrun-test/busybox:$tag" > out 2> err
	cat err
	assert_eq 125 "$rc" "pull of $tag"
	assert_eq 1 "$(wc -l < err)" "lines of the refusal"
	grep -q -- "$msg" err || fail "the refusal does not say '$msg'"
	reg_wait_requests "^GET /v2/ctrun-test/busybox/manifests/$tag " 1 || fail "no manifest request"
	if reg_requests | grep -q "/blobs/"; then fail "blobs were downloaded: $(reg_requests | grep /blobs/)"; fi
	[ -z "$(ls store/images)" ] || fail "an image was published"
	[ -z "$(ls store/blobs/sha256)" ] || fail "blobs were kept"
}

huge_layer() { refused_early huge "layer 1 (sha256:.*) is 100 GiB, more than \[cache\] max_unpacked (64 GiB): not downloaded"; }
behaviour "a layer declared larger than [cache] max_unpacked: refused before it is downloaded" huge_layer

no_disk() { refused_early nodisk "900.0 GiB to download, more than the .* free in the image store" CTRUN_CACHE_MAX_UNPACKED=0; }
behaviour "more to download than the store has free: refused before anything is downloaded" no_disk

big_config() { refused_early bigconfig "its config sha256:.* is 17 MiB, more than an image config may be (16 MiB)"; }
behaviour "a config declared over 16 MiB: never downloaded" big_config

# A bound each layer fits, all of them together not.
max=$("$PY" -c 'import json; print(max(l["size"] for l in json.load(open("manifest.json"))["layers"]) + 1)')
layers_sum() { refused_early latest "its layers are .*, more than \[cache\] max_unpacked ([0-9.]* MiB)" CTRUN_CACHE_MAX_UNPACKED=$max; }
behaviour "an image whose layers are more than [cache] max_unpacked: refused before they are downloaded" layers_sum

fits() {
	run_rc "$CTRUN" -q pull "docker://$REG_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
	assert_eq 0 "$rc" "the real image's pull"
}
behaviour "the real image, within every bound, is pulled" fits
