#!/usr/bin/env python3
"""reg_token.py - the test suite's token issuer for a docker-registry (distribution 2.8) in
token auth mode (reglib.sh starts it).  It follows the distribution token spec
(docs/spec/auth/token.md):

  GET /token?service=SERVICE&scope=repository:REPO:pull[,push]&scope=...
      Authorization: Basic (a user of --users)  ->  200 {"token", "access_token",
      "expires_in", "issued_at"}; no or wrong credentials -> 401 with a Basic challenge
      (or, with --anonymous, no credentials get a pull-only token); another service -> 400.

The token is an RS256 JWT signed with openssl (`openssl dgst -sha256 -sign`): claims iss,
sub, aud (= the service), exp, nbf, iat, jti and access (every requested repository action
out of pull and push, and registry:catalog:*), header either `x5c` (the signing
certificate, which the registry verifies against its rootcertbundle) or `kid` (the
libtrust key ID of the signing key, which must be a key of a certificate in the bundle).

--expires-in N: the JSON's expires_in is N, and the JWT's exp is set so that the registry,
which accepts a token until exp + 60 s (token.Leeway), refuses it N s after it was issued:
a test can make tokens expire in the middle of a pull.

Every request is one line in --log: `STATUS USER SCOPE...` (USER `-` when none was given,
`?` when the credentials were wrong), written and flushed before the response is sent.

usage: reg_token.py --addr A --port P [--tls-cert C --tls-key K] --sign-key K --sign-cert C
                    [--sign x5c|kid] --issuer I --service S --users FILE [--anonymous]
                    [--expires-in N] --log FILE
"""
import argparse
import base64
import binascii
import datetime
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

LEEWAY = 60  # distribution's registry/auth/token.Leeway


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def pem_der(path, kind="CERTIFICATE"):
    """The DER bytes of the first PEM block of that kind in path."""
    lines, inside = [], False
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line == f"-----BEGIN {kind}-----":
                inside = True
            elif line == f"-----END {kind}-----":
                break
            elif inside:
                lines.append(line)
    return base64.b64decode("".join(lines))


def libtrust_key_id(spki_der):
    """libtrust's KeyID: base32 of the first 30 bytes of SHA-256(DER SubjectPublicKeyInfo),
    in 12 groups of 4 joined by ':'."""
    import hashlib
    s = base64.b32encode(hashlib.sha256(spki_der).digest()[:30]).decode().rstrip("=")
    return ":".join(s[i:i + 4] for i in range(0, len(s), 4))


class Issuer:
    def __init__(self, a):
        self.a = a
        self.users = {}
        with open(a.users) as f:
            for line in f:
                line = line.rstrip("\n")
                if line:
                    u, _, p = line.partition(":")
                    self.users[u] = p
        if a.sign == "x5c":
            self.header = {"typ": "JWT", "alg": "RS256",
                           "x5c": [base64.b64encode(pem_der(a.sign_cert)).decode()]}
        else:
            pub = subprocess.run(["openssl", "x509", "-in", a.sign_cert, "-noout", "-pubkey"],
                                 check=True, stdout=subprocess.PIPE).stdout
            spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pub,
                                  check=True, stdout=subprocess.PIPE).stdout
            self.header = {"typ": "JWT", "alg": "RS256", "kid": libtrust_key_id(spki)}
        self.log = open(a.log, "a")
        self.lock = threading.Lock()
        self.serial = 0

    def note(self, status, user, scopes):
        with self.lock:
            self.log.write(f"{status} {user} {' '.join(scopes) or '-'}\n")
            self.log.flush()

    def sign(self, data):
        return subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.a.sign_key],
                              input=data, check=True, stdout=subprocess.PIPE).stdout

    def token(self, user, scopes, anonymous):
        access = []
        for s in scopes:
            parts = s.split(":")
            if len(parts) < 3:
                continue
            typ, name, actions = parts[0], ":".join(parts[1:-1]), parts[-1].split(",")
            if typ == "repository":
                allowed = {"pull"} if anonymous else {"pull", "push"}
                granted = [x for x in actions if x in allowed]
            elif typ == "registry" and name == "catalog" and not anonymous:
                granted = [x for x in actions if x == "*"]
            else:
                granted = []
            if granted:
                access.append({"type": typ, "name": name, "actions": granted})
        t = time.time()
        now = int(t)
        with self.lock:
            self.serial += 1
            jti = f"{os.getpid()}-{self.serial}-{binascii.hexlify(os.urandom(6)).decode()}"
        claims = {"iss": self.a.issuer, "sub": user, "aud": self.a.service,
                  # At least expires_in s: from the next whole second.
                  "exp": int(t) + 1 + self.a.expires_in - LEEWAY, "nbf": now, "iat": now,
                  "jti": jti, "access": access}
        signing_input = (b64url(json.dumps(self.header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        jwt = signing_input + "." + b64url(self.sign(signing_input.encode()))
        issued = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
        return {"token": jwt, "access_token": jwt, "expires_in": self.a.expires_in,
                "issued_at": issued.strftime("%Y-%m-%dT%H:%M:%SZ")}


def handler_for(issuer):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # the --log lines say what a test needs
            pass

        def reply(self, status, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            q = urllib.parse.parse_qs(url.query)
            scopes = [x for s in q.get("scope", []) for x in s.split(" ") if x]
            if url.path != "/token":
                issuer.note(404, "-", scopes)
                return self.reply(404, {"errors": [{"code": "NOT_FOUND", "message": url.path}]})
            user, anonymous = "-", False
            auth = self.headers.get("Authorization", "")
            if auth[:6].lower() == "basic ":
                try:
                    u, _, p = base64.b64decode(auth[6:]).decode().partition(":")
                except (ValueError, UnicodeDecodeError):
                    u, p = "", None
                if issuer.users.get(u) != p or u == "":
                    issuer.note(401, "?", scopes)
                    return self.reply(401, {"errors": [{"code": "UNAUTHORIZED",
                                                        "message": "wrong user or password"}]},
                                      [("WWW-Authenticate", 'Basic realm="ctrun-test-token"')])
                user = u
            elif issuer.a.anonymous:
                anonymous = True
            else:
                issuer.note(401, "-", scopes)
                return self.reply(401, {"errors": [{"code": "UNAUTHORIZED",
                                                    "message": "credentials required"}]},
                                  [("WWW-Authenticate", 'Basic realm="ctrun-test-token"')])
            if q.get("service", [""])[0] != issuer.a.service:
                issuer.note(400, user, scopes)
                return self.reply(400, {"errors": [{"code": "DENIED",
                                                    "message": "unknown service"}]})
            body = issuer.token("" if anonymous else user, scopes, anonymous)
            issuer.note(200, user, scopes)
            self.reply(200, body)

        def do_POST(self):  # no OAuth2 here: clients fall back to GET on 404
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            issuer.note(404, "-", ["POST"])
            self.reply(404, {"errors": [{"code": "NOT_FOUND", "message": "use GET"}]})

    return H


def main():
    ap = argparse.ArgumentParser(description="the test suite's token issuer (see the source)")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--sign-key", required=True)
    ap.add_argument("--sign-cert", required=True)
    ap.add_argument("--sign", choices=["x5c", "kid"], default="x5c")
    ap.add_argument("--issuer", required=True)
    ap.add_argument("--service", required=True)
    ap.add_argument("--users", required=True)
    ap.add_argument("--anonymous", action="store_true")
    ap.add_argument("--expires-in", type=int, default=300)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    issuer = Issuer(a)
    srv = http.server.ThreadingHTTPServer((a.addr, a.port), handler_for(issuer))
    srv.daemon_threads = True
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        # The handshake in the request's thread, not in accept(): a slow client
        # does not hold up the others.
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                                     do_handshake_on_connect=False)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
