"""tessera.matmul on numpy arrays against what a user writes instead, in one process (issue 42
item 5): torch's numpy -> GPU -> numpy round trip (torch.from_numpy(a).cuda() @ ..., .cpu().numpy(),
TF32 off: the same FP32 arithmetic as tessera's kernels), or numpy's own a @ b on a machine without
a GPU. Random uniform [-1, 1) inputs, a warm-up of each, then --repeats calls of each alternated;
medians. Also says how far apart the two results are (relative Frobenius norm).

  python3 scripts/matmul_bench.py --tessera build/tessera --sizes 1024,4096,8192 --dtype f32 --json out.json
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))
import tessera  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tessera", required=True, help="the binary whose build folder holds tessera._native")
    p.add_argument("--sizes", default="1024,4096,8192")
    p.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--baseline", choices=["torch", "numpy"], default="torch")
    p.add_argument("--json")
    args = p.parse_args()
    os.environ["TESSERA_BIN"] = os.path.abspath(args.tessera)
    dtype = np.float32 if args.dtype == "f32" else np.float64
    if args.baseline == "torch":
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False

        def other(a, b):
            return (torch.from_numpy(a).cuda() @ torch.from_numpy(b).cuda()).cpu().numpy()
    else:
        def other(a, b):
            return a @ b
    rows = []
    rng = np.random.default_rng(3)
    print(f"| n ({args.dtype}) | tessera.matmul (s) | {args.baseline} (s) | tessera / {args.baseline} | TFLOP/s tessera | "
          "rel. difference |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in args.sizes.split(",")):
        a = (rng.random((n, n)) * 2 - 1).astype(dtype)
        b = (rng.random((n, n)) * 2 - 1).astype(dtype)
        ours, theirs = tessera.matmul(a, b), other(a, b)  # warm-up (and the backend's start)
        diff = float(np.linalg.norm(ours.astype(np.float64) - theirs) / np.linalg.norm(theirs.astype(np.float64)))
        t_ours, t_theirs = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            tessera.matmul(a, b)
            t_ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            other(a, b)
            t_theirs.append(time.perf_counter() - t)
        mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
        rows.append({"n": n, "dtype": args.dtype, "tessera_s": t_ours, "baseline_s": t_theirs, "tessera_median": mo,
                     "baseline_median": mt, "relative_difference": diff, "baseline": args.baseline})
        print(f"| {n} | {mo:.4f} | {mt:.4f} | {mo / mt:.3f} | {2 * n**3 / mo / 1e12:.1f} | {diff:.1e} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
