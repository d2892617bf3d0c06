#!/usr/bin/env python3
"""mkindex.py - a multi-platform image from a one-platform OCI archive (mkdocker.py --format oci).

The output is an OCI image-layout tar whose index.json names one image index (tagged --tag)
that lists one image manifest per PLATFORM (os/architecture[/variant], e.g. linux/amd64,
linux/arm64/v8), each with the input's layers and a config that differs from the input's
only in os, architecture and variant: the same bytes run nowhere but on amd64, which is all
a test of platform selection needs.  `skopeo copy --all oci-archive:OUT docker://...`
pushes the index and every image in it.

usage: mkindex.py --tag REPO:TAG IN.tar OUT.tar PLATFORM...
"""
import argparse
import hashlib
import io
import json
import os
import sys
import tarfile

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def add_bytes(t, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode, ti.uname, ti.gname = len(data), 0o644, "root", "root"
    t.addfile(ti, io.BytesIO(data))


def blob_name(digest):
    algo, _, hexd = digest.partition(":")
    return f"blobs/{algo}/{hexd}"


def main():
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[-1])
    ap.add_argument("--tag", required=True)
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("platforms", nargs="+")
    a = ap.parse_args()
    with tarfile.open(a.inp) as src:
        members = {m.name.lstrip("./"): m for m in src.getmembers()}
        read = lambda name: src.extractfile(members[name]).read()
        index = json.loads(read("index.json"))
        if len(index["manifests"]) != 1 or index["manifests"][0]["mediaType"] != MANIFEST:
            sys.exit(f"{a.inp}: expected one image manifest in index.json")
        man = json.loads(read(blob_name(index["manifests"][0]["digest"])))
        config = json.loads(read(blob_name(man["config"]["digest"])))
        blobs = {}  # digest -> bytes of the new metadata blobs
        entries = []
        for p in a.platforms:
            parts = p.split("/")
            if len(parts) not in (2, 3):
                sys.exit(f"platform '{p}': expected os/architecture[/variant]")
            plat = {"architecture": parts[1], "os": parts[0]}
            if len(parts) == 3:
                plat["variant"] = parts[2]
            c = dict(config, architecture=parts[1], os=parts[0])
            c.pop("variant", None)
            if len(parts) == 3:
                c["variant"] = parts[2]
            cb = json.dumps(c, sort_keys=True).encode()
            cd = "sha256:" + hashlib.sha256(cb).hexdigest()
            blobs[cd] = cb
            m = dict(man, config=dict(man["config"], digest=cd, size=len(cb)))
            mb = json.dumps(m).encode()
            md = "sha256:" + hashlib.sha256(mb).hexdigest()
            blobs[md] = mb
            entries.append({"mediaType": MANIFEST, "digest": md, "size": len(mb), "platform": plat})
        ib = json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": entries}).encode()
        idg = "sha256:" + hashlib.sha256(ib).hexdigest()
        blobs[idg] = ib
        top = {"schemaVersion": 2, "manifests": [{
            "mediaType": INDEX, "digest": idg, "size": len(ib),
            "annotations": {"org.opencontainers.image.ref.name": a.tag}}]}
        tmp = a.out + ".tmp"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
            add_bytes(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            for layer in man["layers"]:
                name = blob_name(layer["digest"])
                ti = members[name]
                t.addfile(ti, src.extractfile(ti))
            for d, b in blobs.items():
                add_bytes(t, blob_name(d), b)
            add_bytes(t, "index.json", json.dumps(top).encode())
        os.rename(tmp, a.out)


if __name__ == "__main__":
    sys.exit(main())
