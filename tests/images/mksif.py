#!/usr/bin/env python3
"""mksif.py - wraps a squashfs in a SIF file (the tests' own converter).

Writes the layout of sylabs/sif v2 (pkg/sif): a 128-byte global header, a
table of 48 packed 585-byte descriptors at offset 4096, then the data objects.
The squashfs becomes one partition descriptor: datatype Partition (0x4004),
fstype Squashfs (1), parttype PrimSys (2), arch "02" (amd64), 4096-aligned.
All integers little-endian, as encoding/binary writes them.

usage: mksif.py IN.sqsh OUT.sif
"""
import os
import shutil
import struct
import sys
import time
import uuid

LAUNCH = b"#!/usr/bin/env run-singularity\n"
DESCR_OFF = 4096
DESCR_CAP = 48
DESCR_SIZE = 585
DATA_PARTITION = 0x4004
FS_SQUASH = 1
PART_PRIMSYS = 2
ARCH_AMD64 = b"02\0"
GROUP_DEFAULT = 0xF0000000 | 1
ALIGN = 4096


def header(now, dfree, data_off, data_size, arch):
    h = struct.pack("<32s10s3s3s16sqqqqqqqq", LAUNCH, b"SIF_MAGIC\0", b"01\0", arch,
                    uuid.uuid4().bytes, now, now, dfree, DESCR_CAP, DESCR_OFF,
                    DESCR_CAP * DESCR_SIZE, data_off, data_size)
    assert len(h) == 128
    return h


def descriptor(now, ident, off, size, padded, name):
    extra = struct.pack("<ii3s", FS_SQUASH, PART_PRIMSYS, ARCH_AMD64)
    d = struct.pack("<i?IIIqqqqqqq128s384s", DATA_PARTITION, True, ident, GROUP_DEFAULT, 0,
                    off, size, padded, now, now, 0, 0, name.encode()[:128], extra)
    assert len(d) == DESCR_SIZE
    return d


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        if f.read(4) != b"hsqs":
            sys.exit(f"mksif.py: {src} is not a squashfs")
    size = os.path.getsize(src)
    now = int(time.time())
    data_start = DESCR_OFF + DESCR_CAP * DESCR_SIZE
    part_off = (data_start + ALIGN - 1) // ALIGN * ALIGN
    tmp = dst + ".tmp"
    with open(tmp, "wb") as out:
        out.write(header(now, DESCR_CAP - 1, data_start, part_off - data_start + size, ARCH_AMD64))
        out.seek(DESCR_OFF)
        out.write(descriptor(now, 1, part_off, size, part_off - data_start + size,
                             os.path.basename(src)))
        out.write(b"\0" * ((DESCR_CAP - 1) * DESCR_SIZE))
        out.seek(part_off)
        with open(src, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
    os.rename(tmp, dst)


if __name__ == "__main__":
    main()
