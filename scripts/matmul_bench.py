"""tessera.matmul on numpy arrays against what a user writes instead, in one process (issue 42
item 5): torch's numpy -> GPU -> numpy round trip (torch.from_numpy(a).cuda() @ ..., .cpu().numpy(),
TF32 off: the same FP32 arithmetic as tessera's kernels), or numpy's own a @ b on a machine without
a GPU. Random uniform [-1, 1) inputs, a warm-up of each, then --repeats calls of each alternated;
medians. Also says how far apart the two results are (relative Frobenius norm).

With --memory gpu the arrays are torch tensors on the GPU and the baseline is torch.matmul on the
same tensors (TF32 off): each timed sample is a loop of calls (enough for ~50 ms of work) closed by
torch.cuda.synchronize(), divided by the calls, as a pipeline of products on one stream runs them.
--allow-nonfinite skips tessera's NaN/Inf scan of A and B (torch does none); without it, each call
waits for its scan.

  python3 scripts/matmul_bench.py --tessera build/tessera --sizes 1024,4096,8192 --dtype f32 --json out.json
  python3 scripts/matmul_bench.py --tessera build/tessera --memory gpu --sizes 1024,4096,16384
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
    p.add_argument("--memory", choices=["host", "gpu"], default="host")
    p.add_argument("--allow-nonfinite", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    if args.memory == "gpu":
        return gpu_tensors(args)
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


def gpu_tensors(args):
    """tessera.matmul against torch.matmul on the same CUDA tensors, loops of calls on one stream."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    os.environ["TESSERA_BIN"] = os.path.abspath(args.tessera)
    dtype = torch.float32 if args.dtype == "f32" else torch.float64
    gen = torch.Generator(device="cuda").manual_seed(3)
    rows = []
    print(f"| n ({args.dtype}, GPU tensors) | calls a sample | tessera.matmul (ms) | torch.matmul (ms) | tessera / torch | "
          "TFLOP/s tessera | rel. difference |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.sizes.split(",")):
        a = torch.rand((n, n), generator=gen, device="cuda", dtype=dtype) * 2 - 1
        b = torch.rand((n, n), generator=gen, device="cuda", dtype=dtype) * 2 - 1
        out_t, out_o = torch.empty_like(a), torch.empty_like(a)
        ours = lambda: tessera.matmul(a, b, out=out_t, allow_nonfinite=args.allow_nonfinite)  # noqa: E731
        theirs = lambda: torch.matmul(a, b, out=out_o)  # noqa: E731
        for run in (ours, theirs, ours, theirs):  # warm-up: the backend's start, cuBLAS's heuristics
            run()
        torch.cuda.synchronize()
        diff = float(torch.linalg.norm(out_t.double() - out_o.double()) / torch.linalg.norm(out_o.double()))
        t = time.perf_counter()
        theirs()
        torch.cuda.synchronize()
        calls = max(1, min(1000, int(0.05 / max(time.perf_counter() - t, 1e-6))))

        def sample(run):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                run()
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / calls

        t_ours, t_theirs = [], []
        for _ in range(args.repeats):
            t_ours.append(sample(ours))
            t_theirs.append(sample(theirs))
        mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
        rows.append({"n": n, "dtype": args.dtype, "memory": "gpu", "calls": calls, "tessera_s": t_ours,
                     "baseline_s": t_theirs, "tessera_median": mo, "baseline_median": mt, "relative_difference": diff,
                     "baseline": "torch.matmul", "allow_nonfinite": args.allow_nonfinite})
        print(f"| {n} | {calls} | {mo * 1e3:.3f} | {mt * 1e3:.3f} | {mo / mt:.3f} | {2 * n**3 / mo / 1e12:.1f} | "
              f"{diff:.1e} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
