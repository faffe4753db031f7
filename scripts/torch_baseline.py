#!/usr/bin/env python3
"""The script a user would write instead of tessera: h5py reads A and B, torch multiplies them on
the GPU (float32, TF32 off, like tessera's default), h5py writes C. Prints the time of each step
and the total, for docs/performance.md.  Usage: torch_baseline.py A.h5:/A B.h5:/B C.h5:/C"""
import sys
import time

import h5py
import torch


def split(ref):
    f, _, d = ref.rpartition(":/")
    return f, "/" + d


torch.backends.cuda.matmul.allow_tf32 = False
torch.cuda.init()
torch.ones(1, device="cuda")  # context creation outside the timing, as a warm process would have it
(af, ad), (bf, bd), (cf, cd) = (split(x) for x in sys.argv[1:4])
t0 = time.perf_counter()
with h5py.File(af, "r") as f:
    a = f[ad][...]
with h5py.File(bf, "r") as f:
    b = f[bd][...]
t1 = time.perf_counter()
ga, gb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
torch.cuda.synchronize()
t2 = time.perf_counter()
gc = ga @ gb
torch.cuda.synchronize()
t3 = time.perf_counter()
c = gc.cpu().numpy()
t4 = time.perf_counter()
with h5py.File(cf, "w") as f:
    f.create_dataset(cd, data=c)
t5 = time.perf_counter()
print(f"torch_read_seconds {t1 - t0:.3f}")
print(f"torch_h2d_seconds {t2 - t1:.3f}")
print(f"torch_matmul_seconds {t3 - t2:.3f}")
print(f"torch_d2h_seconds {t4 - t3:.3f}")
print(f"torch_write_seconds {t5 - t4:.3f}")
print(f"torch_total_seconds {t5 - t0:.3f}")
