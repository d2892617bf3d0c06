#!/bin/bash
# The test registry itself (reglib.sh), before any test of ctrun's pulls
# relies on it: a real docker-registry on the cluster's bridge address in each
# mode (TLS + htpasswd, token auth with the suite's issuer, plain HTTP),
# checked as a client sees it, with curl (challenges, credentials, tokens,
# the access log) and with skopeo (a real client); the cached storage of the
# test images (read-only, a multi-platform index, the layered torch image);
# and that a registry never outlives the test that started it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
need_image BUSYBOX busybox-docker.tar
need_image BUSYBOX_OCI busybox-oci.tar
reg_image_storage STORE
cd "$TMPD"
N1=${NODES[0]}

# status URL-PATH [CURL-OPTION...]: the HTTP status the registry answers.
status() { reg_curl "$1" -o /dev/null -w '%{http_code}' "${@:2}"; }
# header NAME FILE: a header's value in a curl -D dump.
header() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | tail -1; }
count() { reg_requests | grep -cxE -- "$1" || true; }
# json EXPR < JSON: a python expression of the document j.
json() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }
inspect() { reg_skopeo inspect "$(_reg_tls_opts)" "$@"; }
# Both manifest kinds the registry may serve for a tag.
ACCEPT='Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'

# Each registry is started and stopped at the top level (its cleanup is the EXIT
# trap's), between the behaviours that use it.
reg_start --user alice:pw-alice --user carol:pw-carol
tls_htpasswd() {
	assert_eq "$CTRUN_CLUSTER_SUBNET.1" "$REG_ADDR" "the registry's address"
	assert_eq "https://$REG_ADDR:$REG_PORT" "$REG_URL" "REG_URL"
	[ "$REG_USER:$REG_PASSWORD" = alice:pw-alice ] || fail "REG_USER/REG_PASSWORD: $REG_USER:$REG_PASSWORD"
	grep -q '^alice:[$]2y[$]' "$REG_DIR/htpasswd" || fail "the htpasswd entry is not bcrypt: $(cat "$REG_DIR/htpasswd")"
	reg_curl /v2/ -D h -o /dev/null
	assert_eq 'Basic realm="ctrun-test-registry"' "$(header www-authenticate h)" "the challenge of GET /v2/"
	assert_eq 401 "$(status /v2/)" "GET /v2/ without credentials"
	assert_eq 401 "$(status /v2/ -u alice:pw-carol)" "GET /v2/ with a wrong password"
	assert_eq 401 "$(status /v2/ -u mallory:pw-alice)" "GET /v2/ as an unknown user"
	assert_eq 200 "$(status /v2/ -u carol:pw-carol)" "GET /v2/ as carol"
	# Without the CA, the certificate is not trusted: TLS is real.
	run_rc curl -sS -o /dev/null "$REG_URL/v2/" 2>/dev/null
	[ "$rc" -ne 0 ] || fail "curl trusted the registry's certificate without its CA"
}
behaviour "TLS + htpasswd on the cluster's bridge address" tls_htpasswd
# The image of this behaviour and the next.
reg_push "$BUSYBOX" ctrun-test/busybox:latest
pushed() {
	digest=$(reg_digest ctrun-test/busybox:latest)
	[[ $digest == sha256:* ]] || fail "no digest for ctrun-test/busybox:latest: '$digest'"
	# A real client: skopeo sees the 2 layers of the archive and its Env.
	inspect --creds alice:pw-alice "docker://$REG_HOST/ctrun-test/busybox:latest" >insp.json
	assert_eq 2 "$(json 'len(j["Layers"])' <insp.json)" "layers of ctrun-test/busybox:latest"
	assert_eq "$digest" "$(json 'j["Digest"]' <insp.json)" "skopeo's digest of ctrun-test/busybox:latest"
	grep -q CTRUN_IMAGE_ENV=busybox insp.json || fail "skopeo inspect shows no image Env: $(cat insp.json)"
	run_rc inspect --creds alice:nope "docker://$REG_HOST/ctrun-test/busybox:latest" >/dev/null 2>&1
	[ "$rc" -ne 0 ] || fail "skopeo inspect succeeded with a wrong password"
}
behaviour "TLS + htpasswd: the pushed image, as skopeo (a real client) sees it" pushed

access_log() {
	layer=$(reg_curl /v2/ctrun-test/busybox/manifests/latest -u alice:pw-alice -H "$ACCEPT" |
		json 'j["layers"][1]["digest"]')
	before=$(count 'GET /v2/ctrun-test/busybox/manifests/latest 200')
	for _ in 1 2 3; do
		assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/latest -u alice:pw-alice -H "$ACCEPT")" "manifest GET"
	done
	assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/latest -u alice:pw-alice -I -H "$ACCEPT")" "manifest HEAD"
	assert_eq 404 "$(status /v2/ctrun-test/busybox/manifests/nosuchtag -u alice:pw-alice)" "GET of a tag never pushed"
	reg_curl "/v2/ctrun-test/busybox/blobs/$layer" -u alice:pw-alice -L -o layer.tar.gz
	assert_eq "$layer" "sha256:$(sha256sum <layer.tar.gz | cut -d' ' -f1)" "the digest of the blob served"
	# The second layer deletes a file of the first (a whiteout) and empties a directory.
	tar -tzf layer.tar.gz >layer.list
	grep -qx 'etc/.wh.deleted-by-layer2' layer.list || fail "no whiteout in layer 2: $(cat layer.list)"
	grep -qx 'opt/old/.wh..wh..opq' layer.list || fail "no opaque directory in layer 2: $(cat layer.list)"
	reg_wait_requests "^GET /v2/ctrun-test/busybox/blobs/$layer 200\$" 1 ||
		fail "the blob GET is not in the access log: $(reg_requests | tail -3)"
	assert_eq $((before + 3)) "$(count 'GET /v2/ctrun-test/busybox/manifests/latest 200')" "manifest GETs logged"
	assert_eq 1 "$(count 'HEAD /v2/ctrun-test/busybox/manifests/latest 200')" "manifest HEADs logged"
	assert_eq 1 "$(count 'GET /v2/ctrun-test/busybox/manifests/nosuchtag 404')" "404s logged"
	assert_eq 1 "$(count "GET /v2/ctrun-test/busybox/blobs/$layer 200")" "blob GETs logged"
	reg_requests | tail -1 | grep -qx "GET /v2/ctrun-test/busybox/blobs/$layer 200" ||
		fail "the blob GET is not the last request logged: $(reg_requests | tail -3)"
	run_rc reg_wait_requests "^DELETE " 1 1
	[ "$rc" -ne 0 ] || fail "reg_wait_requests saw a request nobody made"
}
behaviour "the access log counts what a client asked, in order" access_log

nodes() {
	assert_eq "$CTRUN_CLUSTER_CONTROLLER:$REG_PORT" "$REG_NAME" "REG_NAME"
	code=$("$CLUSTER" exec "$N1" curl -sS -o /dev/null -w '%{http_code}' --cacert "$REG_CA" \
		-u alice:pw-alice -H "$ACCEPT" "https://$REG_NAME/v2/ctrun-test/busybox/manifests/latest")
	assert_eq 200 "$code" "a manifest GET from $N1 to https://$REG_NAME"
	code=$("$CLUSTER" exec "$N1" curl -sS -o /dev/null -w '%{http_code}' --cacert "$REG_CA" \
		-u alice:pw-alice "https://$REG_HOST/v2/")
	assert_eq 200 "$code" "GET /v2/ from $N1 to https://$REG_HOST"
}
behaviour "the nodes reach it by the controller's name, with the CA" nodes

pid=$REG_PID dir=$REG_DIR url=$REG_URL
reg_stop
reg_stopped() {
	[ ! -e "/proc/$pid" ] || fail "docker-registry (pid $pid) still runs after reg_stop"
	[ ! -e "$dir" ] || fail "reg_stop left $dir"
	assert_eq 000 "$(curl -s -o /dev/null -w '%{http_code}' -k "$url/v2/" || true)" "GET /v2/ after reg_stop"
}
behaviour "reg_stop ends the registry and removes its files" reg_stopped

reg_start --auth token --user bob:pw-bob
token_x5c() {
	reg_curl /v2/ -D h -o /dev/null
	assert_eq "Bearer realm=\"$REG_REALM\",service=\"$REG_SERVICE\"" "$(header www-authenticate h)" \
		"the challenge of GET /v2/"
	[[ $REG_REALM == "https://$REG_ADDR:"*/token ]] || fail "REG_REALM: $REG_REALM"
	reg_push "$BUSYBOX_OCI" ctrun-test/busybox:oci
	reg_curl /v2/ctrun-test/busybox/manifests/oci -D h -o /dev/null
	assert_eq "Bearer realm=\"$REG_REALM\",service=\"$REG_SERVICE\",scope=\"repository:ctrun-test/busybox:pull\"" \
		"$(header www-authenticate h)" "the challenge of a manifest GET"
	# The registry does not take the issuer's Basic credentials itself.
	assert_eq 401 "$(status /v2/ctrun-test/busybox/manifests/oci -u bob:pw-bob)" "a manifest GET with Basic credentials"
	scope=repository:ctrun-test/busybox:pull
	curl -sS --cacert "$REG_CA" -u bob:pw-bob -G --data-urlencode "service=$REG_SERVICE" \
		--data-urlencode "scope=$scope" "$REG_REALM" >token.json
	assert_eq 300 "$(json 'j["expires_in"]' <token.json)" "expires_in"
	assert_eq True "$(json 'j["token"] == j["access_token"] and j["issued_at"].endswith("Z")' <token.json)" \
		"token, access_token and issued_at"
	tok=$(json 'j["token"]' <token.json)
	assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/oci -H "Authorization: Bearer $tok" \
		-H "$ACCEPT")" "a manifest GET with the issuer's token"
	# The registry verifies what it is given: the token of another repository, a
	# token whose claims were changed after signing, one not signed at all.
	other=$(reg_token repository:ctrun-test/other:pull)
	assert_eq 401 "$(status /v2/ctrun-test/busybox/manifests/oci -H "Authorization: Bearer $other")" \
		"a manifest GET with a token for another repository"
	forged=$(python3 - "$tok" <<'EOF'
import base64, json, sys
h, c, s = sys.argv[1].split(".")
claims = json.loads(base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)))
claims["access"][0]["name"] = "ctrun-test/busybox"
claims["sub"] = "mallory"
c = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
print(f"{h}.{c}.{s}")
EOF
	)
	assert_eq 401 "$(status /v2/ctrun-test/busybox/manifests/oci -H "Authorization: Bearer $forged")" \
		"a manifest GET with a token changed after signing"
	unsigned=${tok%.*}.
	assert_eq 401 "$(status /v2/ctrun-test/busybox/manifests/oci -H "Authorization: Bearer $unsigned")" \
		"a manifest GET with an unsigned token"
	assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REG_CA" -u bob:wrong -G \
		--data-urlencode "service=$REG_SERVICE" --data-urlencode "scope=$scope" "$REG_REALM")" \
		"a token request with a wrong password"
	assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REG_CA" -G \
		--data-urlencode "service=$REG_SERVICE" --data-urlencode "scope=$scope" "$REG_REALM")" \
		"a token request without credentials"
	# skopeo, a real client, through the issuer.
	inspect --creds bob:pw-bob "docker://$REG_HOST/ctrun-test/busybox:oci" >insp.json
	assert_eq 2 "$(json 'len(j["Layers"])' <insp.json)" "layers of ctrun-test/busybox:oci"
	# The issuer's log: every request, the wrong password as user '?'.
	reg_token_requests >tokens.log
	grep -qx "200 bob repository:ctrun-test/busybox:pull,push" tokens.log || fail "no push token in: $(cat tokens.log)"
	assert_eq 1 "$(grep -cx "401 ? $scope" tokens.log)" "token requests with a wrong password"
	assert_eq 1 "$(grep -cx "401 - $scope" tokens.log)" "token requests without credentials"
	[ "$(grep -cx "200 bob $scope" tokens.log)" -ge 3 ] || fail "token requests for $scope: $(cat tokens.log)"
}
behaviour "token auth: the suite's issuer, RS256 tokens the registry verifies (x5c)" token_x5c
reg_stop

reg_start --auth token --expires-in 3
token_expiry() {
	reg_push "$BUSYBOX" ctrun-test/busybox:latest
	tok=$(reg_token repository:ctrun-test/busybox:pull)
	assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/latest -H "Authorization: Bearer $tok" \
		-H "$ACCEPT")" "a manifest GET with a fresh token"
	# Refused 3 to 4 s after it was issued; 20 s is a guard, far above that, and far
	# below the 63 s the registry would accept it if the issuer did not account for
	# the registry's 60 s of leeway.
	deadline=$((SECONDS + 20))
	while :; do
		code=$(status /v2/ctrun-test/busybox/manifests/latest -H "Authorization: Bearer $tok" -H "$ACCEPT")
		[ "$code" = 401 ] || [ "$SECONDS" -ge "$deadline" ] && break
		sleep 0.1
	done
	assert_eq 401 "$code" "a manifest GET with the token 20 s after it was issued for 3 s"
}
behaviour "token auth: a token expires when the issuer said it would" token_expiry
reg_stop

reg_start --auth token --sign kid --anonymous
token_kid() {
	reg_push "$BUSYBOX" ctrun-test/busybox:latest
	tok=$(reg_token repository:ctrun-test/busybox:pull)
	python3 - "$tok" <<'EOF' || fail "the token's header does not name its key by kid"
import base64, json, sys
h = sys.argv[1].split(".")[0]
h = json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4)))
assert "x5c" not in h and len(h["kid"].split(":")) == 12, h
EOF
	assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/latest -H "Authorization: Bearer $tok" \
		-H "$ACCEPT")" "a manifest GET with a kid token"
	anon=$(curl -sS -f --cacert "$REG_CA" -G --data-urlencode "service=$REG_SERVICE" \
		--data-urlencode "scope=repository:ctrun-test/busybox:pull,push" "$REG_REALM" | json 'j["token"]')
	assert_eq 200 "$(status /v2/ctrun-test/busybox/manifests/latest -H "Authorization: Bearer $anon" \
		-H "$ACCEPT")" "an anonymous pull"
	assert_eq 401 "$(status /v2/ctrun-test/busybox/blobs/uploads/ -X POST -H "Authorization: Bearer $anon")" \
		"an anonymous push"
}
behaviour "token auth, the key named by kid (its libtrust ID), anonymous pulls" token_kid
reg_stop

reg_start --plain --auth none
plain() {
	assert_eq "http://$REG_ADDR:$REG_PORT" "$REG_URL" "REG_URL"
	assert_eq 200 "$(status /v2/)" "GET /v2/"
	reg_push "$BUSYBOX" ctrun-test/busybox:latest
	inspect --no-creds "docker://$REG_HOST/ctrun-test/busybox:latest" >insp.json
	assert_eq 2 "$(json 'len(j["Layers"])' <insp.json)" "layers over plain HTTP"
	reg_wait_requests '^PUT /v2/ctrun-test/busybox/manifests/latest 201$' 1 ||
		fail "no manifest PUT in the access log: $(reg_requests)"
	assert_eq 1 "$(count 'PUT /v2/ctrun-test/busybox/manifests/latest 201')" "the manifest PUT of the push"
	assert_eq 000 "$(curl -s -o /dev/null -w '%{http_code}' -k "https://$REG_HOST/v2/" || true)" \
		"https to a plain registry"
}
behaviour "plain HTTP" plain
reg_stop

reg_start --storage "$STORE"
find "$STORE" -type f -printf '%P %s %T@\n' | sort >store.before
storage() {
	while read -r ref want; do
		assert_eq "$want" "$(reg_digest "$ref")" "the digest of $ref"
	done <"$STORE/digests"
	grep -q '^ctrun-test/torch:latest ' "$STORE/digests" || fail "no torch image in $STORE/digests"
	inspect --creds "$REG_USER:$REG_PASSWORD" "docker://$REG_HOST/ctrun-test/torch:latest" >insp.json
	assert_eq 3 "$(json 'len(j["Layers"])' <insp.json)" "layers of the torch image (Debian, python3, torch)"
	# The multi-platform index: 2 platforms, a client picks either.
	reg_curl /v2/ctrun-test/busybox/manifests/multiarch -u "$REG_USER:$REG_PASSWORD" \
		-H 'Accept: application/vnd.oci.image.index.v1+json' >index.json
	assert_eq application/vnd.oci.image.index.v1+json "$(json 'j["mediaType"]' <index.json)" "the index's type"
	assert_eq "linux/amd64 linux/arm64/v8" "$(json '" ".join("/".join(filter(None, (m["platform"]["os"],
		m["platform"]["architecture"], m["platform"].get("variant")))) for m in j["manifests"])' <index.json)" \
		"the index's platforms"
	for arch in amd64 arm64; do
		inspect --override-arch "$arch" --creds "$REG_USER:$REG_PASSWORD" \
			"docker://$REG_HOST/ctrun-test/busybox:multiarch" >insp.json
		assert_eq "$arch" "$(json 'j["Architecture"]' <insp.json)" "the image skopeo picks for $arch"
	done
	# No test can change it: pushes are refused, nothing in it changed.
	run_rc reg_push "$BUSYBOX" ctrun-test/busybox:pushed 2>push.err
	[ "$rc" -ne 0 ] || fail "a push to the read-only storage succeeded"
	reg_wait_requests '^(POST|PUT|PATCH) .* 405$' 1 ||
		fail "the registry did not refuse the push (405): $(reg_requests | tail -5)"
}
behaviour "the cached storage of the test images: its digests, the torch image, the index, no push" storage
reg_stop

storage_unchanged() {
	find "$STORE" -type f -printf '%P %s %T@\n' | sort | diff store.before - ||
		fail "the cached storage changed under a read-only registry"
}
behaviour "the cached storage of the test images is unchanged (read-only)" storage_unchanged

not_outlived() {
	# A test killed before its EXIT trap: the registry and the issuer go with it.
	cat >killed.sh <<EOF
. "$CTRUN_REPO/tests/integration/reglib.sh"
TMPD=$TMPD
reg_start --auth token
echo "\$REG_PID \$REG_TOKEN_PID" >pids
kill -9 \$\$
EOF
	# (The shell between reports the kill on its stderr.)
	run_rc bash -c 'bash killed.sh; exit $?' 2>/dev/null
	read -r rpid tpid <pids
	for ((i = 0; i < 100; i++)); do
		{ _reg_alive "$rpid" || _reg_alive "$tpid"; } || break
		sleep 0.1
	done
	! _reg_alive "$rpid" || fail "docker-registry (pid $rpid) outlived its killed test"
	! _reg_alive "$tpid" || fail "the token issuer (pid $tpid) outlived its killed test"
	# A test that fails: its EXIT trap (the test's own, after reg_stop) ends them.
	cat >failed.sh <<EOF
set -e
. "$CTRUN_REPO/tests/integration/reglib.sh"
TMPD=$TMPD
trap 'echo own trap ran >trap.ran' EXIT
reg_start --auth token
echo "\$REG_PID \$REG_TOKEN_PID \$REG_DIR" >pids
false
echo not reached
EOF
	run_rc bash failed.sh
	[ "$rc" -ne 0 ] || fail "failed.sh did not fail"
	read -r rpid tpid rdir <pids
	[ -e trap.ran ] || fail "reg_start dropped the test's own EXIT trap"
	{ [ ! -e "/proc/$rpid" ] && [ ! -e "/proc/$tpid" ]; } || fail "the registry outlived a failed test"
	[ ! -e "$rdir" ] || fail "a failed test's registry left $rdir"
}
behaviour "a registry does not outlive its test" not_outlived
