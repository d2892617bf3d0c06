#!/usr/bin/env python3
"""reg_proxy.py - the test suite's fault-injecting HTTP proxy, between a registry client
(ctrun, over plain HTTP: [registry] plain_http) and the real registry of reglib.sh (HTTP or
TLS with its CA).  Every byte of every answer still comes from the registry: the proxy only
refuses, redirects, cuts or appends, as the options say; without any it forwards.

Two origins, both plain HTTP on --addr:
  --port P         the registry's stand-in: requests are forwarded to --upstream (one
                   connection each, the Authorization, Accept and Range headers passed on)
  --store-port P2  blob storage on another origin (what a registry's 307 points to, as S3
                   or a CDN): /blobstore/DIGEST?sig=ID serves that blob, fetched from the
                   registry with the credentials the redirected request carried (as a
                   presigned URL does); a request that brings an Authorization header of
                   its own gets 400, as S3 answers one with two authentications

Faults (each counted over the whole life of the proxy):
  --fail-manifests STATUS   manifest requests get STATUS (429, 503) and no body ...
  --fail-count N            ... the first N of them (default 0: every one)
  --retry-after S           ... with `Retry-After: S` (default: none)
  --redirect-blobs          blob GETs get a 307 to --store-port (needs it; the faults
                            below then do not apply)
  --cut DIGEST:N            the first GET of that blob without a Range: the registry's
                            status and headers (its whole Content-Length), N bytes of the
                            body, then the connection closes
  --expire-blob K           the K-th blob GET, when it carries an Authorization: 401 with
                            the registry's own challenge (the request forwarded without
                            credentials), as a registry answers an expired token
  --garbage DIGEST:N        every GET of that blob: N bytes more after the registry's body,
                            Content-Length covering them

Every request is one line in --log, written and flushed before the answer's body is sent
(so a client that has its answer finds the line there):
    ORIGIN METHOD PATH STATUS AUTH RANGE ACTION
ORIGIN `front` or `store`; PATH without the query; STATUS the one sent; AUTH the scheme of
the request's Authorization (Basic, Bearer) or `-`; RANGE the Range header or `-`; ACTION
`forward`, `fail`, `redirect`, `cut:N`, `expired`, `garbage:N` or `refused`.
GET /-/ready answers 200 on both origins and is not logged (what a test waits for).

usage: reg_proxy.py --addr A --port P [--store-port P2] --upstream URL [--ca FILE] --log FILE
                    [FAULT...]
"""
import argparse
import http.client
import http.server
import os
import re
import secrets
import ssl
import sys
import threading
import urllib.parse

HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
       "trailers", "transfer-encoding", "upgrade", "host", "content-length"}
BLOB = re.compile(r"^/v2/(.+)/blobs/(sha256:[0-9a-f]{64})$")
MANIFEST = re.compile(r"^/v2/(.+)/manifests/[^/]+$")


class Proxy:
    def __init__(self, a):
        self.a = a
        u = urllib.parse.urlsplit(a.upstream)
        self.up_tls = u.scheme == "https"
        self.up_host, self.up_port = u.hostname, u.port or (443 if self.up_tls else 80)
        self.ctx = None
        if self.up_tls:
            self.ctx = ssl.create_default_context(cafile=a.ca)
        self.lock = threading.Lock()
        self.log = open(a.log, "a")
        self.manifests = 0   # manifest requests seen
        self.blob_gets = 0   # blob GETs seen on the front
        self.cut_done = False
        self.signed = {}     # sig -> (registry path, Authorization or None)
        self.cut = self.split(a.cut)
        self.garbage = self.split(a.garbage)

    @staticmethod
    def split(spec):
        if not spec:
            return None
        d, _, n = spec.rpartition(":")
        return d, int(n)

    def note(self, origin, method, path, status, auth, rng, action):
        scheme = auth.split(" ", 1)[0] if auth else "-"
        with self.lock:
            self.log.write(f"{origin} {method} {path} {status} {scheme} {rng or '-'} {action}\n")
            self.log.flush()

    def upstream(self, method, path, headers):
        """(status, reason, headers, body) of the registry's answer."""
        if self.up_tls:
            c = http.client.HTTPSConnection(self.up_host, self.up_port, context=self.ctx,
                                            timeout=60)
        else:
            c = http.client.HTTPConnection(self.up_host, self.up_port, timeout=60)
        try:
            c.request(method, path, headers=headers)
            r = c.getresponse()
            body = r.read() if method != "HEAD" else b""
            return r.status, r.reason, [(k, v) for k, v in r.getheaders()
                                        if k.lower() not in HOP], body
        finally:
            c.close()


def handler_for(p, origin):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # the --log lines say what a test needs
            pass

        def send(self, status, reason, headers, body, length=None, action="forward",
                 upath=None):
            """Logs, then answers; length: the Content-Length said (default len(body))."""
            url = urllib.parse.urlsplit(self.path)
            p.note(origin, self.command, upath or url.path, status,
                   self.headers.get("Authorization"), self.headers.get("Range"), action)
            self.close_connection = True
            self.send_response(status, reason)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self.wfile.flush()

        def passed_on(self, auth=True):
            h = {}
            for k in ("Accept", "Range", "User-Agent") + (("Authorization",) if auth else ()):
                if self.headers.get(k) is not None:
                    h[k] = self.headers[k]
            return h

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/-/ready":
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if origin == "store":
                return self.store(url)
            return self.front(url)

        def store(self, url):
            sig = urllib.parse.parse_qs(url.query).get("sig", [""])[0]
            with p.lock:
                signed = p.signed.get(sig)
            if self.headers.get("Authorization") is not None:
                return self.send(400, "Bad Request", [("Content-Type", "text/plain")],
                                 b"only one auth mechanism allowed\n", action="refused")
            if signed is None:
                return self.send(403, "Forbidden", [("Content-Type", "text/plain")],
                                 b"no such signature\n", action="refused")
            path, auth = signed
            h = self.passed_on(auth=False)
            if auth:
                h["Authorization"] = auth
            st, reason, hdrs, body = p.upstream(self.command, path, h)
            self.send(st, reason, hdrs, body)

        def front(self, url):
            path = url.path
            a = p.a
            if MANIFEST.match(path) and a.fail_manifests:
                with p.lock:
                    p.manifests += 1
                    fail = a.fail_count == 0 or p.manifests <= a.fail_count
                if fail:
                    hdrs = [("Content-Type", "text/plain")]
                    if a.retry_after is not None:
                        hdrs.append(("Retry-After", str(a.retry_after)))
                    return self.send(a.fail_manifests, None, hdrs, b"", action="fail")
            m = BLOB.match(path)
            if m and self.command == "GET":
                digest = m.group(2)
                with p.lock:
                    p.blob_gets += 1
                    nth = p.blob_gets
                    cut = (p.cut is not None and p.cut[0] == digest and not p.cut_done and
                           self.headers.get("Range") is None)
                    if cut:
                        p.cut_done = True
                if a.redirect_blobs:
                    sig = secrets.token_hex(16)
                    with p.lock:
                        p.signed[sig] = (self.path, self.headers.get("Authorization"))
                    loc = f"http://{a.addr}:{a.store_port}/blobstore/{digest}?sig={sig}"
                    return self.send(307, None, [("Location", loc)], b"", action="redirect")
                if nth == a.expire_blob and self.headers.get("Authorization") is not None:
                    st, reason, hdrs, body = p.upstream("GET", self.path,
                                                        self.passed_on(auth=False))
                    if st != 401:
                        return self.send(502, None, [], b"the registry did not challenge\n",
                                         action="expired")
                    return self.send(st, reason, hdrs, body, action="expired")
                st, reason, hdrs, body = p.upstream("GET", self.path, self.passed_on())
                if cut and st == 200 and len(body) > p.cut[1]:
                    return self.send(st, reason, hdrs, body[:p.cut[1]], length=len(body),
                                     action=f"cut:{p.cut[1]}")
                if p.garbage is not None and p.garbage[0] == digest and st in (200, 206):
                    n = p.garbage[1]
                    return self.send(st, reason, hdrs, body + os.urandom(n), action=f"garbage:{n}")
                return self.send(st, reason, hdrs, body)
            st, reason, hdrs, body = p.upstream(self.command, self.path, self.passed_on())
            self.send(st, reason, hdrs, body)

    return H


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hung up (ctrun stopping a transfer) is no error of the proxy's.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="the test suite's fault-injecting proxy (see the source)")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--store-port", type=int)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--ca")
    ap.add_argument("--log", required=True)
    ap.add_argument("--fail-manifests", type=int)
    ap.add_argument("--fail-count", type=int, default=0)
    ap.add_argument("--retry-after", type=int)
    ap.add_argument("--redirect-blobs", action="store_true")
    ap.add_argument("--cut")
    ap.add_argument("--expire-blob", type=int, default=0)
    ap.add_argument("--garbage")
    a = ap.parse_args()
    if a.redirect_blobs and not a.store_port:
        ap.error("--redirect-blobs needs --store-port")
    p = Proxy(a)
    servers = [Server((a.addr, a.port), handler_for(p, "front"))]
    if a.store_port:
        servers.append(Server((a.addr, a.store_port), handler_for(p, "store")))
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    servers[0].serve_forever()


if __name__ == "__main__":
    sys.exit(main())
