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

  zeros:N          one file `z` of N zero bytes (what fills a decoder's
                   dictionary or window)
  etc              a folder etc (the config's /etc/environment then makes no
                   folder, so the store records the image's layers for reuse)

A layer is gzip unless its spec ends in @COMP, what a hostile registry may
serve in its place (the manifest says tar+gzip all the same, except for
none and zstd):
  @none            the tar itself
  @xz              xz whose block header asks for a 4 GiB dictionary (made
                   with a 256 KiB one: the data decode the same with it)
  @lzma, @bzip2    the .lzma format (xz's lzma -0), bzip2
  @zstd, @zstd2g   zstd frames of raw blocks whose header asks for a window
                   of 128 MiB (zstd's largest by default), of 2 GiB
  @zstd-in-gzip    that zstd frame (128 MiB), gzip'd

reg_layers.py --tars DIR LAYER...: each layer as DIR/SPEC.tar (its name made
of the spec's letters, digits, '-' and '_'), where not there yet, and nothing
else (the streaming writer's fuzz seeds: tests/fuzz/run.sh).

Layers are written as they are made (a layer of a million members is never
in memory); the config's rootfs.diff_ids are their uncompressed digests.
Used by tests/integration/t_registry_layer_bounds.sh,
tests/bench/layers.sh and tests/fuzz/run.sh."""
import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import struct
import sys
import tarfile
import zlib


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


class Zeros(io.RawIOBase):
    """n zero bytes to read."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


class ZstdRaw:
    """A zstd frame of raw blocks (RFC 8878, 3.1.1) whose header asks for a
    window of 2^log bytes: zstd itself, made without a zstd library."""

    def __init__(self, log):
        self.head = b"\x28\xb5\x2f\xfd\x00" + bytes([(log - 10) << 3])

    def compress(self, data):
        out, self.head = [self.head], b""
        for i in range(0, len(data), 1 << 17):
            block = data[i:i + (1 << 17)]
            out.append(struct.pack("<I", len(block) << 3)[:3] + block)
        return b"".join(out)

    def flush(self):
        return self.head + b"\x01\x00\x00"  # an empty raw block, the last


COMPRESSORS = {
    "xz": lambda: lzma.LZMACompressor(lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_LZMA2, "preset": 0}]),
    "lzma": lambda: lzma.LZMACompressor(lzma.FORMAT_ALONE, preset=0),
    "bzip2": bz2.BZ2Compressor,
    "zstd": lambda: ZstdRaw(27),
    "zstd2g": lambda: ZstdRaw(31),
}


class Compressing(io.RawIOBase):
    """A write-only stream into f through compressors (the first innermost)."""

    def __init__(self, f, comps):
        self.f, self.comps = f, comps

    def writable(self):
        return True

    def write(self, b):
        b = bytes(b)
        n = len(b)
        for c in self.comps:
            b = c.compress(b)
        self.f.write(b)
        return n

    def close(self):
        if not self.closed:
            b = b""
            for c in self.comps:
                b = c.compress(b) + c.flush() if b else c.flush()
            self.f.write(b)
        super().close()


def xz_4g(path):
    """The xz file's (only) block header asks for a dictionary of 4 GiB - 1
    (LZMA2's property 40), its CRC32 made again (xz file format 3.1)."""
    with open(path, "r+b") as f:
        f.seek(12)
        h = bytearray(f.read(12))
        if h[0] != 2 or h[1] != 0 or h[2:4] != b"\x21\x01":
            sys.exit("reg_layers.py: an xz block header of another shape: %s" % h.hex())
        h[4] = 40
        h[8:12] = struct.pack("<I", zlib.crc32(bytes(h[:8])))
        f.seek(12)
        f.write(h)


def compressors(comp):
    if comp in COMPRESSORS:
        return [COMPRESSORS[comp]()]
    if comp == "zstd-in-gzip":
        return [ZstdRaw(27), zlib.compressobj(1, wbits=31)]
    sys.exit("reg_layers.py: no compression %r" % comp)


def write_layer(path, spec):
    """The layer of spec (KIND:ARGS[@COMP]) into path: the digest of its tar."""
    spec, _, comp = spec.partition("@")
    with open(path, "wb") as raw:
        if comp == "none":
            packed = raw
        elif comp in ("", "gzip"):
            packed = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0)
        else:
            packed = Compressing(raw, compressors(comp))
        plain = Hashed(packed)
        tar(plain, spec)
        if packed is not raw:
            packed.close()
    if comp == "xz":
        xz_4g(path)
    return plain.h.hexdigest()


def member(t, name, kind=tarfile.REGTYPE, data=b"", link="", pax=False):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data)
    info.mtime = 1700000000
    info.mode = {tarfile.SYMTYPE: 0o777, tarfile.DIRTYPE: 0o755}.get(kind, 0o644)
    if pax:  # libarchive reads a hard link's data only in a pax member
        info.pax_headers = {"comment": "x"}
    t.addfile(info, io.BytesIO(data) if data else None)


def members(t, spec):
    kind, *args = spec.split(":")
    n = int(args[0]) if args else 0
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
    elif kind == "etc":
        member(t, "etc", tarfile.DIRTYPE)
    elif kind == "zeros":
        info = tarfile.TarInfo("z")
        info.size, info.mtime, info.mode = n, 1700000000, 0o644
        t.addfile(info, Zeros(n))
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
    diff = write_layer(tmp, spec)
    h, size = hashlib.sha256(), 0
    with open(tmp, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
            size += len(b)
    digest = h.hexdigest()
    os.rename(tmp, os.path.join(out, "blobs", "sha256", digest))
    comp = spec.partition("@")[2]
    kind = {"none": "", "zstd": "+zstd"}.get(comp, "+gzip")
    return ({"mediaType": "application/vnd.oci.image.layer.v1.tar" + kind,
             "digest": "sha256:" + digest, "size": size}, "sha256:" + diff)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: reg_layers.py [--tars] OUT LAYER...")
    if sys.argv[1] == "--tars":
        os.makedirs(sys.argv[2], exist_ok=True)
        for spec in sys.argv[3:]:
            path = os.path.join(sys.argv[2], re.sub("[^A-Za-z0-9_-]", "_", spec) + ".tar")
            if not os.path.exists(path):
                write_layer(path + ".tmp", spec if "@" in spec else spec + "@none")
                os.rename(path + ".tmp", path)
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
