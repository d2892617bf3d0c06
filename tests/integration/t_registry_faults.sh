#!/bin/bash
# What a well-behaved registry never shows, put between ctrun and the real
# registry (reglib.sh: TLS, token auth) by the suite's fault-injecting proxy
# (reg_proxy.py: plain HTTP to ctrun, every byte still the registry's; it only
# refuses, redirects, cuts or appends), a fresh proxy and store per case: a
# 429 with Retry-After (retried), 503 on every manifest request (given up
# after session.c's 6 tries, one line, nothing published), blobs behind a 307
# to another origin (followed, no Authorization sent there), a blob's
# connection cut (resumed with a Range), a 401 to a token mid-pull (a new
# token), and a blob longer than its manifest says (refused, nothing kept).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
cd "$TMPD"
unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR ENROOT_CONFIG_PATH
export HOME=$TMPD/home
mkdir -p "$HOME"
reg_start --storage "$STORAGE" --auth token
# The token realm is the issuer itself (https, the test's CA), not behind the proxy.
export CTRUN_REGISTRY_CA_FILE=$REG_CA
want=$(reg_digest ctrun-test/busybox:latest)
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:latest" > manifest.json
layer=$("$PY" -c 'import json; print(json.load(open("manifest.json"))["layers"][0]["digest"])')
layer_size=$("$PY" -c 'import json; print(json.load(open("manifest.json"))["layers"][0]["size"])')
layer_file=$STORAGE/docker/registry/v2/blobs/sha256/${layer:7:2}/${layer#sha256:}/data
[ "$layer_size" -gt 200000 ] || fail "the test image's first layer is too small to cut: $layer_size"
repo=/v2/ctrun-test/busybox

# The proxy: one at a time, ended first on any exit (before reg_stop and the
# removal of $TMPD), and by SIGKILL when this shell dies.
PX_PID=""
px_stop() {
	_reg_end "${PX_PID:-}" reg_proxy.py
	PX_PID=""
	return 0
}
# shellcheck disable=SC2064
{ eval "set -- $(trap -p EXIT)"; trap "px_stop; ${3:-}" EXIT; }

# px_start CASE FAULT-OPTION...: a fresh proxy with those faults in front of the
# registry (both its origins answering), and what the case's pull needs: PX_HOST,
# PX_LOG (its log), PX_STORE (a store of the case's own), an auth.json for PX_HOST.
px_start() {
	local name=$1 port sport
	shift
	px_stop
	PX_LOG=$TMPD/$name.proxy.log PX_STORE=$TMPD/$name.store
	for _ in 1 2 3; do
		port=$(_reg_free_port "$REG_ADDR") && sport=$(_reg_free_port "$REG_ADDR" "$port") ||
			fail "no free port for the proxy"
		: > "$PX_LOG"
		setpriv --pdeathsig KILL "$PY" "$REG_LIB/reg_proxy.py" --addr "$REG_ADDR" --port "$port" \
			--store-port "$sport" --upstream "$REG_URL" --ca "$REG_CA" --log "$PX_LOG" "$@" \
			2> "$TMPD/$name.proxy.err" &
		PX_PID=$!
		if _reg_wait_http "http://$REG_ADDR:$port/-/ready" "$PX_PID" reg_proxy.py 2>/dev/null &&
			_reg_wait_http "http://$REG_ADDR:$sport/-/ready" "$PX_PID" reg_proxy.py 2>/dev/null; then
			PX_HOST=$REG_ADDR:$port
			printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$PX_HOST" \
				"$(printf '%s:%s' "$REG_USER" "$REG_PASSWORD" | base64 -w0)" > "$TMPD/$name.auth.json"
			chmod 600 "$TMPD/$name.auth.json"
			PX_AUTH=$TMPD/$name.auth.json
			return 0
		fi
		px_stop
		grep -q 'Address already in use' "$TMPD/$name.proxy.err" || break
	done
	fail "reg_proxy.py did not start: $(tail -3 "$TMPD/$name.proxy.err")"
}

# pull [CTRUN-OPTION...]: ctrun pull of the test image through the proxy: $rc, out, err.
pull() {
	run_rc env CTRUN_REGISTRY_PLAIN_HTTP="$PX_HOST" CTRUN_REGISTRY_STORE="$PX_STORE" \
		CTRUN_REGISTRY_AUTH_FILE="$PX_AUTH" "$CTRUN" "$@" pull \
		"docker://$PX_HOST/ctrun-test/busybox:latest" > out 2> err
	cat err
}
# px_log [ERE]: the proxy's lines (ORIGIN METHOD PATH STATUS AUTH RANGE ACTION), those matching.
px_log() { grep -E -- "${1:-.}" "$PX_LOG" || true; }
# pulled: the pull gave the registry's image.
pulled() {
	assert_eq 0 "$rc" "$1"
	assert_eq "$PX_STORE/images/sha256-${want#sha256:}.sqsh" "$(cat out)" "$1: the image"
	cmp -s "$layer_file" "$PX_STORE/blobs/sha256/${layer#sha256:}" ||
		fail "$1: the stored layer differs from the registry's"
}

case_a() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	px_start a --fail-manifests 429 --fail-count 1 --retry-after 1
	pull -v
	px_log "^front GET $repo/manifests/"
	pulled "a pull after a 429"
	assert_eq "429 fail" "$(px_log "^front GET $repo/manifests/" | head -1 | cut -d' ' -f4,7)" \
		"the first manifest request's answer"
	assert_eq "200 forward" "$(px_log "^front GET $repo/manifests/" | tail -1 | cut -d' ' -f4,7)" \
		"the last manifest request's answer"
	assert_eq 1 "$(px_log "^front .* 429 " | wc -l)" "429s answered"
	grep -q "answered 429, retrying in 1 s" err || fail "-v does not say it retried"
}

case_b() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	px_start b --fail-manifests 503 --retry-after 1
	pull
	assert_eq 125 "$rc" "a pull against 503s"
	assert_eq 1 "$(wc -l < err)" "lines of the error"
	grep -q "$PX_HOST answered 503 6 times" err || fail "the error does not say 503 6 times"
	assert_eq 6 "$(px_log "^front GET $repo/manifests/latest 503 " | wc -l)" "manifest requests"
	assert_eq 0 "$(px_log "^front GET $repo/blobs/" | wc -l)" "blob requests"
	[ -z "$(ls "$PX_STORE/images" 2>/dev/null)" ] || fail "an image was published"
	[ ! -e "$PX_STORE/refs" ] || [ -z "$(find "$PX_STORE/refs" -type f)" ] || fail "a tag was recorded"
}

case_c() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	px_start c --redirect-blobs
	pull -v
	px_log
	pulled "a pull through redirects"
	assert_eq 3 "$(px_log "^front GET $repo/blobs/sha256:[0-9a-f]{64} 307 Bearer - redirect$" | wc -l)" \
		"blob GETs with a token redirected by the registry's origin"
	assert_eq 3 "$(px_log "^store GET /blobstore/sha256:[0-9a-f]{64} 200 - - forward$" | wc -l)" \
		"blob GETs without credentials served by the other origin"
	assert_eq 0 "$(px_log "^store .* (Basic|Bearer) " | wc -l)" "requests with an Authorization on the other origin"
	assert_eq 0 "$(px_log "^front GET $repo/blobs/.* 200 " | wc -l)" "blobs served by the registry's origin"
}

case_d() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	px_start d --cut "$layer:65536"
	pull -v
	px_log "^front GET $repo/blobs/$layer "
	pulled "a pull with a cut connection"
	assert_eq "200 Bearer - cut:65536" "$(px_log "^front GET $repo/blobs/$layer " | head -1 | cut -d' ' -f4-)" \
		"the layer's first GET"
	assert_eq "206 Bearer bytes=65536- forward" \
		"$(px_log "^front GET $repo/blobs/$layer " | sed -n 2p | cut -d' ' -f4-)" "the layer's second GET"
	assert_eq 2 "$(px_log "^front GET $repo/blobs/$layer " | wc -l)" "GETs of the layer"
	grep -q "blob ${layer:0:19}: connection lost at byte 65536, resuming" err ||
		fail "-v does not say the download resumed"
	reg_wait_requests "^GET $repo/blobs/$layer 206$" 1 || fail "the registry answered no ranged GET"
	[ -z "$(ls "$PX_STORE/tmp")" ] || fail "store tmp/ not empty: $(ls "$PX_STORE/tmp")"
}

case_e() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	before=$(reg_token_requests | wc -l)
	px_start e --expire-blob 2
	pull -v
	px_log "^front GET $repo/blobs/"
	pulled "a pull with a token refused mid-pull"
	assert_eq 1 "$(px_log "^front GET $repo/blobs/sha256:[0-9a-f]{64} 401 Bearer - expired$" | wc -l)" \
		"blob GETs refused"
	assert_eq 3 "$(px_log "^front GET $repo/blobs/sha256:[0-9a-f]{64} 200 Bearer - forward$" | wc -l)" \
		"blob GETs served"
	issued=$(reg_token_requests | tail -n +"$((before + 1))")
	echo "$issued"
	assert_eq "200 $REG_USER repository:ctrun-test/busybox:pull
200 $REG_USER repository:ctrun-test/busybox:pull" "$issued" "the issuer's answers during the pull"
}

case_f() {
	# Its proxy is this subshell's child: stopped when the behaviour ends, however it ends.
	trap px_stop EXIT
	px_start f --garbage "$layer:4096"
	pull
	assert_eq 125 "$rc" "a pull of an overlong layer"
	grep -q "blob ${layer:0:19}: the registry sent more than the $layer_size bytes its manifest says" err ||
		fail "the overlong blob is not named"
	assert_eq 1 "$(px_log "^front GET $repo/blobs/$layer 200 Bearer - garbage:4096$" | wc -l)" \
		"GETs of the layer (not resumed)"
	[ ! -e "$PX_STORE/blobs/sha256/${layer#sha256:}" ] || fail "the overlong layer was kept"
	[ -z "$(ls "$PX_STORE/tmp")" ] || fail "store tmp/ not empty: $(ls "$PX_STORE/tmp")"
	[ -z "$(ls "$PX_STORE/images")" ] || fail "an image was published"
	px_stop
}

behaviour "(a) 429 with Retry-After: 1 on the first manifest request: retried, pulled" case_a
behaviour "(b) 503 on every manifest request: given up after 6 tries, in one line, nothing published" case_b
behaviour "(c) blobs behind a 307 to another origin: followed, no Authorization sent there" case_c
behaviour "(d) a layer's connection cut after 64 KiB: resumed with a Range, pulled" case_d
behaviour "(e) a 401 with the registry's challenge to a token mid-pull: a new token, pulled" case_e
behaviour "(f) a layer longer than its manifest says: refused, nothing of it kept" case_f
