#!/usr/bin/env python3
"""reg_layers.py OUT LAYER...: an OCI image layout OUT (one manifest, amd64)
whose gzip layers, bottom first, are what a hostile or merely unusual
registry may serve (issue 41: what a layer may cost a pull):

  symlinks:N:SIZE  a file `f`, then N symlinks l0.. whose targets are SIZE
                   bytes each (pax linkpath: tar takes targets of any length)
  files:N:LEN      N empty files with names of about LEN bytes, in 8 folders
  pairs:N          N files fI ("a"), each followed by a hard link hI to it
                   carrying data ("b"): pax lets a hard link carry data, which
                   becomes the file's
  rewrite:N        N hard links rI carrying data ("c") to the files fI of a
                   layer below (pairs:N)
  links:N          one file `f`, then N hard links hI to it, each carrying data
  mixed:N          a folder d of N files, then what a layer does to such a
                   folder: a symlink to it and a file through the symlink, a
                   hard link carrying data, a whiteout, an opaque marker, a
                   file of its own after the marker

reg_layers.py --tars DIR LAYER...: each layer as DIR/N.tar, uncompressed, and
nothing else (the streaming writer's fuzz seeds: tests/fuzz/run.sh).

Layers are written as they are made (a layer of a million members is never
in memory); the config's rootfs.diff_ids are their uncompressed digests.
Used by tests/integration/t_registry_layer_bounds.sh,
tests/bench/layers.sh and tests/fuzz/run.sh."""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


class Hashed(io.RawIOBase):
    """A write-only stream into f that hashes what passes."""

    def __init__(self, f):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def writable(self):
        return True

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return self.f.write(b)


def member(t, name, kind=tarfile.REGTYPE, data=b"", link="", pax=False):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data)
    info.mtime, info.mode = 1700000000, 0o777 if kind == tarfile.SYMTYPE else 0o644
    if pax:  # libarchive reads a hard link's data only in a pax member
        info.pax_headers = {"comment": "x"}
    t.addfile(info, io.BytesIO(data) if data else None)


def members(t, spec):
    kind, *args = spec.split(":")
    n = int(args[0])
    if kind == "symlinks":
        member(t, "f", data=b"f\n")
        for i in range(n):
            member(t, "l%d" % i, tarfile.SYMTYPE, link="t" * int(args[1]))
    elif kind == "files":
        pad = "n" * max(int(args[1]) - 16, 1)
        for i in range(n):
            member(t, "d%d/%s%d" % (i % 8, pad, i))
    elif kind == "pairs":
        for i in range(n):
            member(t, "f%d" % i, data=b"a")
            member(t, "h%d" % i, tarfile.LNKTYPE, b"b", "f%d" % i, pax=True)
    elif kind == "rewrite":
        for i in range(n):
            member(t, "r%d" % i, tarfile.LNKTYPE, b"c", "f%d" % i, pax=True)
    elif kind == "mixed":
        for i in range(n):
            member(t, "d/f%d" % i, data=b"%d\n" % i)
        member(t, "ln", tarfile.SYMTYPE, link="/d")
        member(t, "ln/via", data=b"via\n")
        member(t, "h", tarfile.LNKTYPE, b"new\n", "d/f0", pax=True)
        member(t, "d/.wh.f1")
        member(t, "d/.wh..wh..opq")
        member(t, "d/own", data=b"own\n")
    elif kind == "links":
        member(t, "f", data=b"f")
        for i in range(n):
            member(t, "h%d" % i, tarfile.LNKTYPE, b"h", "f", pax=True)
    else:
        sys.exit("reg_layers.py: no layer kind %r" % kind)


def put(out, data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + d, "size": len(data)}


def tar(f, spec):
    with tarfile.open(fileobj=f, mode="w|", format=tarfile.PAX_FORMAT) as t:
        members(t, spec)


def layer(out, spec):
    tmp = os.path.join(out, "layer.tmp")
    with open(tmp, "wb") as raw:
        packed = Hashed(raw)
        with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=1, mtime=0) as z:
            plain = Hashed(z)
            tar(plain, spec)
    digest = packed.h.hexdigest()
    os.rename(tmp, os.path.join(out, "blobs", "sha256", digest))
    return ({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
             "digest": "sha256:" + digest, "size": packed.n}, "sha256:" + plain.h.hexdigest())


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: reg_layers.py [--tars] OUT LAYER...")
    if sys.argv[1] == "--tars":
        os.makedirs(sys.argv[2], exist_ok=True)
        for i, spec in enumerate(sys.argv[3:]):
            with open(os.path.join(sys.argv[2], "%d.tar" % i), "wb") as f:
                tar(f, spec)
        return
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "blobs", "sha256"))
    layers, diffs = zip(*(layer(out, spec) for spec in sys.argv[2:]))
    config = put(out, json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": list(diffs)}}).encode())
    config["mediaType"] = "application/vnd.oci.image.config.v1+json"
    manifest = put(out, json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": list(layers)}).encode())
    manifest["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [manifest]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


main()
