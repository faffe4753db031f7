"""The h5py + numpy side of docs/performance.md's batch row: A (b x M x K) and B (K x N) read from
in.h5, C = A @ B (numpy broadcasts B over the batch), written with h5py to np_out.h5 and made
durable (fsync), as tessera commits its C. Run in the data's folder."""
import os

import h5py

with h5py.File("in.h5", "r") as f:
    a = f["A"][...]
    b = f["B"][...]
c = a @ b
with h5py.File("np_out.h5", "w") as f:
    f["C"] = c
fd = os.open("np_out.h5", os.O_RDONLY)
os.fsync(fd)
os.close(fd)
