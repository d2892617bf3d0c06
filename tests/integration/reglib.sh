# reglib.sh - sourced by tests (after lib.sh): a real container registry for one test,
# Debian's docker-registry (distribution 2.8), started and stopped by the test.
#
#   reg_start [OPTION...]    starts it (and, with --auth token, the suite's token issuer,
#                            reg_token.py) and waits until it answers /v2/; exports REG_*:
#       --plain              HTTP, no TLS (default: TLS with a throwaway CA made here)
#       --auth basic|token|none   basic (default): htpasswd, bcrypt (htpasswd -B);
#                            token: the registry trusts tokens of reg_token.py, which
#                            takes the users' Basic credentials; none: anyone
#       --user USER:PASSWORD a user of basic or token auth (repeatable; the first is
#                            REG_USER/REG_PASSWORD; default: ctrunpull and a random one)
#       --anonymous          token auth: no credentials get a pull-only token
#       --expires-in N       token auth: tokens say expires_in N, and the registry
#                            refuses them N s after they were issued (default 300)
#       --sign x5c|kid       token auth: how the token names its key (default x5c)
#       --storage DIR        serve DIR (a filesystem driver root, e.g. reg_image_storage)
#                            read-only: the registry refuses writes and DIR is mounted
#                            read-only under it (default: an empty, writable storage)
#       --addr IP            where it listens (default: the test cluster's bridge address,
#                            $CTRUN_CLUSTER_SUBNET.1, which the nodes reach; else 127.0.0.1)
#   reg_stop                 stops the registry and the issuer, removes REG_DIR; always
#                            returns 0 (reg_start chains it into the EXIT trap)
#   reg_push ARCHIVE REF [SKOPEO-OPTION...]   pushes a docker archive, an OCI archive
#                            or an OCI layout directory (every image of an index) to
#                            REG_HOST/REF with skopeo, as REG_USER
#   reg_digest REF           prints the digest of REF's manifest or index (sha256:...)
#   reg_skopeo ARG...        skopeo with this registry's CA, nothing of the machine's
#                            configuration, credentials or caches read or written
#   reg_curl PATH [CURL-OPTION...]   curl of REG_URL/PATH with the CA (no credentials)
#   reg_token SCOPE [USER:PASSWORD]  prints a token of the issuer for SCOPE
#                            (repository:REPO:pull) as REG_USER or USER
#   reg_requests             prints one line per request the registry answered, in order:
#                            METHOD PATH STATUS (the path without its query)
#   reg_wait_requests ERE N [SECS]   until N lines of reg_requests match ERE; false after
#                            SECS (20).  The registry logs a request as its handler
#                            returns, which can be a moment after its client has the
#                            whole response: wait for the last request expected, then count
#   reg_token_requests       prints one line per request the issuer answered:
#                            STATUS USER SCOPE... (USER - none given, ? wrong)
#   reg_image_storage VAR    VAR=the cached storage of the test images (build.sh registry:
#                            busybox, its multi-platform index, the layered torch image),
#                            for --storage; skips the test when it is missing (need_image)
#
# What reg_start exports:
#   REG_DIR         its state (under $TMPD: gone with the test's files at the latest)
#   REG_ADDR REG_PORT REG_HOST (ADDR:PORT)  REG_URL (https://REG_HOST or http://)
#   REG_NAME        NAME:PORT, a name its certificate carries and the nodes resolve
#                   (the controller's host name on the cluster; localhost otherwise)
#   REG_TLS (1|0)   REG_CA (the CA's PEM file)   REG_CERT_DIR (ca.crt alone: --cert-dir)
#   REG_AUTH (basic|token|none)   REG_USER REG_PASSWORD
#   REG_REALM REG_SERVICE REG_ISSUER (token auth: the issuer's URL, service and name)
#   REG_LOG (the registry's log)  REG_ACCESS_LOG  REG_TOKEN_LOG  REG_PID  REG_TOKEN_PID
#
# Run reg_start in the test's own shell (not in $( ) or a pipeline): the registry and
# the issuer are its children and get SIGKILL when it dies, even when it is killed
# before its EXIT trap can run; reg_stop in that trap (reg_start puts it there, before
# the trap the test had) ends them on any exit.  A test that sets its EXIT trap after
# reg_start calls reg_stop in it.  One registry per test at a time.
# shellcheck shell=bash

REG_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REG_DIR="" REG_PID="" REG_TOKEN_PID=""

_reg_die() { echo "reglib: $*" >&2; return 1; }

# _reg_free_port ADDR [NOT]: a port ADDR can bind now, below the kernel's ephemeral
# range (nothing else is handed it between this probe and the bind), other than NOT.
_reg_free_port() {
	python3 - "$1" "${2:-0}" <<'EOF'
import random, socket, sys
addr, avoid = sys.argv[1], int(sys.argv[2])
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
first = 20000 if lo > 21000 else 1024  # above the test clusters' ports (16817.., 17817..)
for _ in range(500):
    p = random.randrange(first, lo)
    if p == avoid:
        continue
    s = socket.socket()
    try:
        s.bind((addr, p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    sys.exit(0)
sys.exit(f"no free port on {addr} in {first}..{lo - 1}")
EOF
}

# _reg_alive PID: the process exists and is not a zombie.
_reg_alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }

# _reg_end PID WORD: TERM (then KILL after 10 s) to PID if its command line has WORD
# (a pid this shell reaped long ago may belong to another process by now); reaps it.
_reg_end() {
	local i
	[ -n "$1" ] || return 0
	if tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"; then
		kill -TERM "$1" 2>/dev/null || true
		for ((i = 0; i < 200; i++)); do _reg_alive "$1" || break; sleep 0.05; done
		kill -KILL "$1" 2>/dev/null || true
	fi
	wait "$1" 2>/dev/null || true
}

reg_stop() {
	_reg_end "${REG_TOKEN_PID:-}" reg_token.py
	_reg_end "${REG_PID:-}" docker-registry
	[ -z "${REG_DIR:-}" ] || rm -rf "$REG_DIR"
	REG_DIR="" REG_PID="" REG_TOKEN_PID=""
	return 0
}

# reg_stop first in the EXIT trap, before whatever the test had there (the
# test's command, as `trap -p` quotes it, expanded now on purpose).
# shellcheck disable=SC2120,SC2064
_reg_trap() {
	local cur
	cur=$(trap -p EXIT)
	case $cur in *reg_stop*) return 0 ;; esac
	eval "set -- $cur"
	trap "reg_stop; ${3:-}" EXIT
}

# _reg_wait_http URL PID WHAT: until URL answers HTTP (any status); false when PID
# ends first or after 30 s (a guard against a hang).
_reg_wait_http() {
	local code deadline=$((SECONDS + 30))
	while [ "$SECONDS" -lt "$deadline" ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 ${REG_CA:+--cacert "$REG_CA"} "$1" || true)
		[ "$code" != 000 ] && [ -n "$code" ] && return 0
		_reg_alive "$2" || { _reg_die "$3 ended before it answered $1"; return 1; }
		sleep 0.05
	done
	_reg_die "$3 did not answer $1 within 30 s"
}

# _reg_certs NAME TOKEN IP...: a throwaway CA, the server's certificate (SAN: the
# IPs, NAME, localhost; ECDSA P-256 keys, quick to make) and, where TOKEN is 1, the
# token signing certificate (RSA: the tokens are RS256), all in REG_DIR.
_reg_certs() {
	local d=$REG_DIR name=$1 token=$2 san ip ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
	shift 2
	san="DNS:$name,DNS:localhost"
	for ip in "$@"; do san+=",IP:$ip"; done
	openssl req -x509 "${ec[@]}" -nodes -days 2 -subj "/CN=ctrun test CA $$" \
		-keyout "$d/ca.key" -out "$d/ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || return 1
	# leaf NAME SUBJECT EXTENSIONS KEY-OPTION...: NAME.key + NAME.crt, signed by the CA.
	_reg_leaf() {
		openssl req "${@:4}" -nodes -subj "/CN=$2" -keyout "$d/$1.key" \
			-out "$d/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
			-set_serial "0x$(openssl rand -hex 8)" -days 2 -out "$d/$1.crt" \
			-extfile <(printf '%s\n' "$3") 2>/dev/null && rm -f "$d/$1.csr"
	}
	_reg_leaf server "$name" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san" "${ec[@]}" || return 1
	if [ "$token" = 1 ]; then
		_reg_leaf token "ctrun test token issuer" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature" -newkey rsa:2048 || return 1
		# What the registry trusts for tokens: the CA (x5c) and the signing certificate (kid).
		cat "$d/ca.crt" "$d/token.crt" >"$d/token-bundle.pem"
	fi
	chmod 600 "$d"/*.key
	chmod 644 "$d"/*.crt
	mkdir -p "$d/certs"
	cp "$d/ca.crt" "$d/certs/ca.crt"
}

reg_start() {
	local tls=1 auth=basic storage="" expires=300 sign=x5c anonymous=0 addr="" users=()
	local name u ro_storage=""
	while [ $# -gt 0 ]; do
		case $1 in
		--plain) tls=0 ;;
		--auth) auth=$2; shift ;;
		--user) users+=("$2"); shift ;;
		--anonymous) anonymous=1 ;;
		--expires-in) expires=$2; shift ;;
		--sign) sign=$2; shift ;;
		--storage) storage=$2; shift ;;
		--addr) addr=$2; shift ;;
		*) _reg_die "reg_start: unknown option '$1'"; return 1 ;;
		esac
		shift
	done
	case $auth in basic|token|none) ;; *) _reg_die "reg_start: --auth basic|token|none"; return 1 ;; esac
	[ -z "${REG_PID:-}" ] || { _reg_die "reg_start: a registry runs already (reg_stop first)"; return 1; }
	[ ${#users[@]} -gt 0 ] || users=("ctrunpull:$(openssl rand -hex 12)")
	if [ -z "$addr" ]; then
		if [ -n "${CTRUN_CLUSTER_SUBNET:-}" ]; then addr=$CTRUN_CLUSTER_SUBNET.1; else addr=127.0.0.1; fi
	fi
	# The name nodes know the machine by (their /etc/hosts), where that is the address.
	name=localhost
	[ -z "${CTRUN_CLUSTER_CONTROLLER:-}" ] || [ "$addr" != "${CTRUN_CLUSTER_SUBNET:-}.1" ] ||
		name=$CTRUN_CLUSTER_CONTROLLER

	# shellcheck disable=SC2119
	_reg_trap
	REG_DIR=$(mktemp -d "${TMPD:-${TMPDIR:-/tmp}}/reg.XXXXXX") || return 1
	chmod 755 "$REG_DIR"
	mkdir -p "$REG_DIR/tmp" "$REG_DIR/registries.d"
	export REG_DIR REG_ADDR=$addr REG_TLS=$tls REG_AUTH=$auth
	export REG_USER=${users[0]%%:*} REG_PASSWORD=${users[0]#*:}
	export REG_LOG=$REG_DIR/registry.log REG_ACCESS_LOG=$REG_DIR/access.log
	export REG_TOKEN_LOG=$REG_DIR/token.log REG_CA="" REG_CERT_DIR=""
	export REG_REALM="" REG_SERVICE="" REG_ISSUER="" REG_TOKEN_PID=""
	if [ "$tls" = 1 ] || [ "$auth" = token ]; then
		_reg_certs "$name" "$([ "$auth" = token ] && echo 1 || echo 0)" "$addr" 127.0.0.1 || { _reg_die "openssl could not make the certificates"; return 1; }
		[ "$tls" = 0 ] || REG_CA=$REG_DIR/ca.crt REG_CERT_DIR=$REG_DIR/certs
	fi
	: >"$REG_TOKEN_LOG"

	local authconf="" scheme=http
	[ "$tls" = 0 ] || scheme=https
	case $auth in
	basic)
		: >"$REG_DIR/htpasswd"
		for u in "${users[@]}"; do
			htpasswd -B -i "$REG_DIR/htpasswd" "${u%%:*}" <<<"${u#*:}" 2>/dev/null ||
				{ _reg_die "htpasswd failed"; return 1; }
		done
		authconf="auth:
  htpasswd:
    realm: ctrun-test-registry
    path: $REG_DIR/htpasswd"
		;;
	token)
		(umask 077; printf '%s\n' "${users[@]}" >"$REG_DIR/users")
		local tport targs=()
		tport=$(_reg_free_port "$addr") || return 1
		REG_SERVICE=ctrun-test-registry REG_ISSUER=ctrun-test-issuer
		REG_REALM=$scheme://$addr:$tport/token
		[ "$tls" = 0 ] || targs+=(--tls-cert "$REG_DIR/server.crt" --tls-key "$REG_DIR/server.key")
		[ "$anonymous" = 0 ] || targs+=(--anonymous)
		setpriv --pdeathsig KILL python3 "$REG_LIB/reg_token.py" --addr "$addr" --port "$tport" \
			"${targs[@]}" --sign-key "$REG_DIR/token.key" --sign-cert "$REG_DIR/token.crt" \
			--sign "$sign" --issuer "$REG_ISSUER" --service "$REG_SERVICE" \
			--users "$REG_DIR/users" --expires-in "$expires" --log "$REG_TOKEN_LOG" \
			>"$REG_DIR/token.out" 2>&1 &
		REG_TOKEN_PID=$!
		_reg_wait_http "$REG_REALM" "$REG_TOKEN_PID" "the token issuer" ||
			{ cat "$REG_DIR/token.out" >&2; return 1; }
		: >"$REG_TOKEN_LOG" # without the probe above (the issuer appends)
		authconf="auth:
  token:
    realm: $REG_REALM
    service: $REG_SERVICE
    issuer: $REG_ISSUER
    rootcertbundle: $REG_DIR/token-bundle.pem"
		;;
	esac

	if [ -n "$storage" ]; then
		[ -d "$storage/docker/registry/v2" ] || { _reg_die "no registry storage in $storage"; return 1; }
		ro_storage=$storage
	else
		storage=$REG_DIR/storage
		mkdir -p "$storage"
	fi
	for _ in 1 2 3; do
		REG_PORT=$(_reg_free_port "$addr") || return 1
		export REG_PORT REG_HOST=$addr:$REG_PORT REG_URL=$scheme://$addr:$REG_PORT REG_NAME=$name:$REG_PORT
		{
			cat <<EOF
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $storage
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
    readonly:
      enabled: $([ -n "$ro_storage" ] && echo true || echo false)
http:
  addr: $REG_HOST
  secret: $(openssl rand -hex 16)
  headers:
    X-Content-Type-Options: [nosniff]
EOF
			[ "$tls" = 0 ] || printf '  tls:\n    certificate: %s\n    key: %s\n' \
				"$REG_DIR/server.crt" "$REG_DIR/server.key"
			[ -z "$authconf" ] || printf '%s\n' "$authconf"
		} >"$REG_DIR/config.yml"
		: >"$REG_ACCESS_LOG"
		if [ -n "$ro_storage" ]; then
			# Read-only under it too: a shared cache no test may change.
			# shellcheck disable=SC2016
			unshare --mount --propagation private sh -c \
				'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" &&
				 exec setpriv --pdeathsig KILL docker-registry serve "$1"' \
				"$ro_storage" "$REG_DIR/config.yml" >>"$REG_ACCESS_LOG" 2>"$REG_LOG" &
		else
			setpriv --pdeathsig KILL docker-registry serve "$REG_DIR/config.yml" \
				>>"$REG_ACCESS_LOG" 2>"$REG_LOG" &
		fi
		REG_PID=$!
		export REG_PID
		if _reg_wait_http "$REG_URL/v2/" "$REG_PID" "docker-registry" 2>/dev/null; then
			# The logs begin with the test's requests, without the probe above (the
			# registry appends).
			: >"$REG_ACCESS_LOG"
			return 0
		fi
		# Another process took the port between the probe and the bind: another port.
		wait "$REG_PID" 2>/dev/null || true
		grep -q 'address already in use' "$REG_LOG" || break
	done
	_reg_die "docker-registry did not start: $(tail -3 "$REG_LOG")"
	return 1
}

reg_skopeo() {
	local d=${REG_DIR:?no registry: reg_start first}
	[ -e "$d/registries.conf" ] || echo 'unqualified-search-registries = []' >"$d/registries.conf"
	# skopeo as root keeps a blob cache in /var/lib/containers: /var/lib is read-only
	# to it (it falls back to a cache in memory), so it writes nothing on the machine.
	# shellcheck disable=SC2016
	CONTAINERS_REGISTRIES_CONF=$d/registries.conf REGISTRY_AUTH_FILE=$d/auth.json \
	TMPDIR=$d/tmp unshare --mount --propagation private sh -c \
		'mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib && exec "$@"' \
		reg_skopeo skopeo --insecure-policy --registries.d "$d/registries.d" --tmpdir "$d/tmp" "$@"
}

# _reg_tls_opts PREFIX: skopeo's options to reach this registry (PREFIX src- or dest-).
_reg_tls_opts() {
	if [ "$REG_TLS" = 1 ]; then echo "--${1:-}cert-dir=$REG_CERT_DIR"; else echo "--${1:-}tls-verify=false"; fi
}

# _reg_creds_opts PREFIX: skopeo's options for REG_USER's credentials (PREFIX src-, dest-
# or none).
_reg_creds_opts() {
	if [ "$REG_AUTH" = none ]; then echo "--${1:-}no-creds"; else echo "--${1:-}creds=$REG_USER:$REG_PASSWORD"; fi
}

reg_push() {
	local src=${1:?usage: reg_push ARCHIVE REF} ref=${2:?usage: reg_push ARCHIVE REF} kind
	shift 2
	if [ -d "$src" ]; then
		kind=oci
	else
		kind=$(python3 - "$src" <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    names = set()
    for m in t:
        names.add(m.name.lstrip("./"))
        if "oci-layout" in names:
            print("oci-archive"); break
    else:
        print("docker-archive" if "manifest.json" in names else "unknown")
EOF
		) || return 1
		[ "$kind" != unknown ] || { _reg_die "reg_push: $src is neither a docker nor an OCI archive"; return 1; }
	fi
	reg_skopeo copy --quiet --all "$(_reg_tls_opts dest-)" "$(_reg_creds_opts dest-)" "$@" \
		"$kind:$src" "docker://$REG_HOST/$ref"
}

# reg_digest REF: the digest of REF's manifest (or index) as the registry serves it.
reg_digest() {
	local raw
	raw=$(mktemp "$REG_DIR/tmp/manifest.XXXXXX")
	reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
		"docker://$REG_HOST/${1:?usage: reg_digest REF}" >"$raw" &&
		echo "sha256:$(sha256sum <"$raw" | cut -d' ' -f1)"
	local rc=$?
	rm -f "$raw"
	return $rc
}

reg_curl() {
	local path=${1:?usage: reg_curl PATH [CURL-OPTION...]}
	shift
	curl -sS ${REG_CA:+--cacert "$REG_CA"} "$@" "$REG_URL$path"
}

reg_token() {
	local scope=${1:?usage: reg_token SCOPE [USER:PASSWORD]} creds=${2:-$REG_USER:$REG_PASSWORD}
	[ -n "$REG_REALM" ] || { _reg_die "reg_token: the registry has no token auth"; return 1; }
	curl -sS -f ${REG_CA:+--cacert "$REG_CA"} -u "$creds" -G --data-urlencode "service=$REG_SERVICE" \
		--data-urlencode "scope=$scope" "$REG_REALM" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])'
}

# The access log (gorilla's combined format, the registry's stdout):
#   ADDR - USER [TIME] "METHOD URI PROTO" STATUS SIZE "REFERER" "AGENT"
reg_requests() {
	sed -nE 's/^[^"]*"([A-Z]+) ([^ ?"]*)[^"]*" ([0-9]{3}) .*/\1 \2 \3/p' "${REG_ACCESS_LOG:?no registry}"
}

# How often the registry served ctrun-test/busybox:latest's manifest and
# blobs so far (t_registry_feed, t_spank_feed count one pull per step).
reg_count() { reg_requests | grep -cE "$1" || true; }
reg_busybox_manifests() { reg_count '^GET /v2/ctrun-test/busybox/manifests/latest 200$'; }
reg_busybox_blob_gets() { reg_count '^GET /v2/ctrun-test/busybox/blobs/sha256:[0-9a-f]{64} 200$'; }
# reg_node_image_sum NODE STORE DIGEST: the sha256 of that image file in a
# node's own store, "none" without one.
reg_node_image_sum() {
	"$CLUSTER" exec "$1" sh -c 'sha256sum "$1" 2>/dev/null | cut -d" " -f1 || echo none' _ \
		"$2/images/sha256-${3#sha256:}.sqsh"
}

reg_wait_requests() {
	local i
	for ((i = 0; i < ${3:-20} * 20; i++)); do
		[ "$(reg_requests | grep -cE -- "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

reg_token_requests() { cat "${REG_TOKEN_LOG:?no registry}"; }

reg_image_storage() {
	local p
	p=$("$REG_LIB/../images/build.sh" path registry)
	[ -d "$p/docker/registry/v2" ] ||
		skip "registry storage of the test images missing (run: tests/images/build.sh registry)"
	printf -v "$1" '%s' "$p"
}

# reg_client FILE: ctrun as a client of this registry: FILE an auth.json (0600) with
# REG_USER's credentials for REG_HOST, named by CTRUN_REGISTRY_AUTH_FILE with the CA in
# CTRUN_REGISTRY_CA_FILE; the machine's own credential sources unset.
reg_client() {
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" \
		"$(printf '%s:%s' "$REG_USER" "$REG_PASSWORD" | base64 -w0)" > "$1"
	chmod 600 "$1"
	unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR ENROOT_CONFIG_PATH
	export CTRUN_REGISTRY_AUTH_FILE=$1 CTRUN_REGISTRY_CA_FILE=$REG_CA
}
