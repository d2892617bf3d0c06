#!/usr/bin/env python3
"""mkdocker.py - packs root file system layers as an image archive (the tests' own converter).

  --format docker : the `docker save` layout: manifest.json, <id>.json config,
                    <layer-id>/layer.tar (uncompressed) per layer, repositories.
  --format oci    : an OCI image-layout tar: oci-layout, index.json, blobs/sha256/
                    (image manifest, config, gzip-compressed layers).

Each LAYERDIR becomes one layer, in order.  Files in a layer directory named
.wh.NAME and .wh..wh..opq are the OCI whiteouts and go into the layer as they
are.  Owners are recorded as root; hard links within a layer are kept.

usage: mkdocker.py [--format docker|oci] [--tag R:T] [--env K=V]... [--workdir D] [--cmd JSON] OUT.tar LAYERDIR...
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile


def as_root(ti):
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    return ti


def layer_tar(src, dst_file):
    """Writes an uncompressed tar of directory src (members relative, no leading ./)."""
    with tarfile.open(fileobj=dst_file, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(src)):
            t.add(os.path.join(src, name), arcname=name, filter=as_root)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def add_bytes(t, name, data):
    ti = as_root(tarfile.TarInfo(name))
    ti.size = len(data)
    ti.mode = 0o644
    t.addfile(ti, io.BytesIO(data))


def config_json(diff_ids, env, cmd=None, workdir="/"):
    return json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": env, "Cmd": cmd or ["/bin/sh"], "WorkingDir": workdir},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
    }, sort_keys=True).encode()


def main():
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[-1])
    ap.add_argument("--format", choices=["docker", "oci"], default="docker")
    ap.add_argument("--tag", default="ctrun-test/image:latest")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--workdir", default="/", help="config.WorkingDir")
    ap.add_argument("--cmd", default=None, help="config.Cmd as a JSON list")
    ap.add_argument("out")
    ap.add_argument("layers", nargs="+")
    a = ap.parse_args()
    workdir = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(a.out)), prefix=".mkdocker.")
    try:
        layers = []  # (path of the tar as stored, diff_id, stored digest, stored size)
        for i, d in enumerate(a.layers):
            raw = os.path.join(workdir, f"layer{i}.tar")
            with open(raw, "wb") as f:
                layer_tar(d, f)
            diff = sha256_file(raw)
            if a.format == "oci":
                gz = raw + ".gz"
                with open(raw, "rb") as fi, gzip.open(gz, "wb", compresslevel=1) as fo:
                    while True:
                        b = fi.read(1 << 20)
                        if not b:
                            break
                        fo.write(b)
                os.unlink(raw)
                layers.append((gz, diff, sha256_file(gz), os.path.getsize(gz)))
            else:
                layers.append((raw, diff, diff, os.path.getsize(raw)))
        cfg = config_json([l[1] for l in layers], a.env,
                          json.loads(a.cmd) if a.cmd else None, a.workdir)
        cfg_digest = hashlib.sha256(cfg).hexdigest()
        tmp = a.out + ".tmp"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
            if a.format == "docker":
                names = []
                for path, diff, _, _ in layers:
                    t.add(path, arcname=f"{diff}/layer.tar", filter=as_root)
                    add_bytes(t, f"{diff}/VERSION", b"1.0")
                    names.append(f"{diff}/layer.tar")
                add_bytes(t, f"{cfg_digest}.json", cfg)
                manifest = [{"Config": f"{cfg_digest}.json", "RepoTags": [a.tag], "Layers": names}]
                add_bytes(t, "manifest.json", json.dumps(manifest).encode())
                repo, _, tag = a.tag.rpartition(":")
                add_bytes(t, "repositories", json.dumps({repo: {tag: layers[-1][1]}}).encode())
            else:
                add_bytes(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
                add_bytes(t, f"blobs/sha256/{cfg_digest}", cfg)
                for path, _, digest, _ in layers:
                    t.add(path, arcname=f"blobs/sha256/{digest}", filter=as_root)
                man = json.dumps({
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": "sha256:" + cfg_digest, "size": len(cfg)},
                    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                "digest": "sha256:" + dg, "size": sz} for _, _, dg, sz in layers],
                }).encode()
                man_digest = hashlib.sha256(man).hexdigest()
                add_bytes(t, f"blobs/sha256/{man_digest}", man)
                index = {"schemaVersion": 2, "manifests": [{
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": "sha256:" + man_digest, "size": len(man),
                    "annotations": {"org.opencontainers.image.ref.name": a.tag}}]}
                add_bytes(t, "index.json", json.dumps(index).encode())
        os.rename(tmp, a.out)
    finally:
        for root, dirs, files in os.walk(workdir, topdown=False):
            for f in files:
                os.unlink(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        os.rmdir(workdir)


if __name__ == "__main__":
    sys.exit(main())
