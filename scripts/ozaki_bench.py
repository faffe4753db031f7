#!/usr/bin/env python3
"""Issue 45's bench: f64-ozaki (float64 through the Ozaki scheme II on the INT8 tensor cores) against
cuBLAS DGEMM in its default math mode (torch.matmul on float64 CUDA tensors), same process, same
inputs, alternated; rate and accuracy.

  python3 scripts/ozaki_bench.py --tessera build-gpu/tessera --sizes 8192,16384 \\
      --inputs uniform,normal,phi0.5,phi1,phi2,exp10,exp30 --json out.json

Inputs (A and B alike, torch's generator, seeded):
  uniform   U[-1, 1)
  normal    N(0, 1)
  phiX      (U[0, 1) - 0.5) * exp(X * N(0, 1)): GEMMul8's generator, spread growing with X
  expE      U[-1, 1) * 2^e, e uniform in [-E, E]: values over 2^+-E

Rate: a warm-up call of each, then --repeats calls of each alternated, each timed alone from a
synchronised device to a synchronised device (tessera's includes its pre-pass read-back);
medians, TFLOP/s = 2 M N K / time.

Accuracy: against an exact-enough reference of --rows sampled rows x --cols sampled columns of C:
double-double dot products on the GPU (Dekker's product, a pairwise two-sum tree: error ~K u^2).
Reported: the max and median relative error |C - ref| / |ref| of each, and the max of
|C - ref| / (|A||B|)_ij (the componentwise measure DGEMM's bound is written in).

$TESSERA_OZAKI_MODULI fixes the moduli (--moduli N sets it); without it the kernel's rule picks them.
While each timed loop runs, nvidia-smi samples the SM clock and the power (every 100 ms)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))


def make(kind, shape, gen, torch):
    u = torch.rand(shape, generator=gen, dtype=torch.float64, device="cuda")
    if kind == "uniform":
        return u * 2 - 1
    if kind == "normal":
        return torch.randn(shape, generator=gen, dtype=torch.float64, device="cuda")
    if kind.startswith("phi"):
        phi = float(kind[3:])
        return (u - 0.5) * torch.exp(phi * torch.randn(shape, generator=gen, dtype=torch.float64, device="cuda"))
    if kind.startswith("exp"):
        e = int(kind[3:])
        ex = torch.randint(-e, e + 1, shape, generator=gen, device="cuda").to(torch.float64)
        return (u * 2 - 1) * torch.pow(2.0, ex)
    raise SystemExit(f"unknown input kind {kind}")


def split(x):
    c = 134217729.0 * x  # 2^27 + 1
    hi = c - (c - x)
    return hi, x - hi


def two_prod(a, b):
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def dd_sum(hi, lo, torch):
    """Pairwise double-double sum over dim 0."""
    while hi.shape[0] > 1:
        if hi.shape[0] % 2:
            z = torch.zeros((1,) + tuple(hi.shape[1:]), dtype=hi.dtype, device=hi.device)
            hi, lo = torch.cat([hi, z]), torch.cat([lo, z])
        h1, h2, l1, l2 = hi[0::2], hi[1::2], lo[0::2], lo[1::2]
        s, e = two_sum(h1, h2)
        e = e + l1 + l2
        hi = s + e
        lo = e - (hi - s)
    return hi[0], lo[0]


def reference(a, b, rows, cols, torch):
    """Exact-enough C[rows][:, cols] and (|A||B|)[rows][:, cols]."""
    bs = b[:, cols]
    refs, mags = [], []
    for i in rows.tolist():
        p, e = two_prod(a[i][:, None], bs)
        hi, lo = dd_sum(p, e, torch)
        refs.append(hi + lo)
        mags.append((a[i].abs()[:, None] * bs.abs()).sum(0))
    return torch.stack(refs), torch.stack(mags)


class Telemetry:
    def __init__(self):
        self.proc = None

    def __enter__(self):
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                          "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
        return self

    def __exit__(self, *exc):
        self.samples = []
        if self.proc:
            self.proc.terminate()
            out, _ = self.proc.communicate()
            for line in out.splitlines():
                try:
                    clk, pw = (float(x) for x in line.split(","))
                    self.samples.append((clk, pw))
                except ValueError:
                    pass

    def summary(self):
        if not self.samples:
            return {}
        return {"sm_mhz_median": statistics.median(s[0] for s in self.samples),
                "power_w_max": max(s[1] for s in self.samples)}


def timed(fn, torch):
    """Wall time of one call and the device work it started (whatever stream it used)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tessera", required=True, help="the binary whose build folder holds tessera._native")
    p.add_argument("--sizes", default="8192,16384", help="N (cube) or MxNxK, comma-separated")
    p.add_argument("--inputs", default="uniform,normal,phi1")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--cols", type=int, default=512)
    p.add_argument("--moduli", type=int, default=0, help="fix the number of moduli (default: the kernel's rule)")
    p.add_argument("--no-accuracy", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    os.environ["TESSERA_BIN"] = os.path.abspath(args.tessera)
    if args.moduli:
        os.environ["TESSERA_OZAKI_MODULI"] = str(args.moduli)
    import torch
    import tessera

    results = []
    print("| M x N x K | inputs | DGEMM s | ozaki s | speed-up | DGEMM TFLOP/s | ozaki TFLOP/s | max rel err DGEMM | "
          "max rel err ozaki | max err/(|A||B|) DGEMM | ozaki | SM MHz | max W |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        dims = [int(x) for x in size.split("x")] if "x" in size else [int(size)] * 3
        m, n, k = dims
        for kind in args.inputs.split(","):
            gen = torch.Generator(device="cuda")
            gen.manual_seed(1234 + m + n + k)
            a = make(kind, (m, k), gen, torch)
            b = make(kind, (k, n), gen, torch)
            c_ref = torch.empty((m, n), dtype=torch.float64, device="cuda")
            c_oz = torch.empty((m, n), dtype=torch.float64, device="cuda")

            def dgemm():
                torch.matmul(a, b, out=c_ref)

            def ozaki():
                tessera.matmul(a, b, out=c_oz, kernel="f64-ozaki", allow_nonfinite=True)

            dgemm(), ozaki()
            td, to = [], []
            with Telemetry() as tele:
                for _ in range(args.repeats):
                    td.append(timed(dgemm, torch))
                    to.append(timed(ozaki, torch))
            md, mo = statistics.median(td), statistics.median(to)
            flops = 2.0 * m * n * k
            row = {"m": m, "n": n, "k": k, "inputs": kind, "dgemm_s": md, "ozaki_s": mo, "speedup": md / mo,
                   "dgemm_tflops": flops / md / 1e12, "ozaki_tflops": flops / mo / 1e12, "dgemm_runs": td,
                   "ozaki_runs": to, "moduli": args.moduli or "rule", **tele.summary()}
            if not args.no_accuracy:
                rows = torch.randperm(m, generator=gen, device="cuda")[: args.rows]
                cols = torch.randperm(n, generator=gen, device="cuda")[: args.cols]
                ref, mag = reference(a, b, rows, cols, torch)
                for name, c in (("dgemm", c_ref), ("ozaki", c_oz)):
                    got = c[rows][:, cols]
                    err = (got - ref).abs()
                    rel = err / ref.abs()
                    row[f"{name}_max_rel"] = float(rel.max())
                    row[f"{name}_median_rel"] = float(rel.median())
                    row[f"{name}_max_componentwise"] = float((err / mag).max())
            results.append(row)
            print(f"| {m}x{n}x{k} | {kind} | {md:.4f} | {mo:.4f} | {md / mo:.3f} | {row['dgemm_tflops']:.1f} | "
                  f"{row['ozaki_tflops']:.1f} | {row.get('dgemm_max_rel', float('nan')):.2e} | "
                  f"{row.get('ozaki_max_rel', float('nan')):.2e} | {row.get('dgemm_max_componentwise', float('nan')):.2e} | "
                  f"{row.get('ozaki_max_componentwise', float('nan')):.2e} | {row.get('sm_mhz_median', '')} | "
                  f"{row.get('power_w_max', '')} |", flush=True)
            del a, b, c_ref, c_oz
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
