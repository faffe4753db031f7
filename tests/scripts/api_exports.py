"""What the shared libtessera exports and needs (ctest api.exports).

`nm -D --defined-only --demangle` on the built libtessera.so: every defined dynamic symbol belongs
to the public API of include/tessera/tessera.hpp (src/api/libtessera.map): none of tessera's
internals (tessera::job::..., tessera::Options::Impl, ...), no std::, nlohmann:: or MPI:: (Open
MPI's C++ bindings) instantiation; and the API's entry points are there. `readelf -d`: libmpi is
NEEDED, libmpi_cxx (the C++ bindings' library) is not."""
import argparse
import re
import subprocess
import sys

# The API's symbols: these prefixes (demangled), nothing else.
PUBLIC = ("tessera::version()", "tessera::multiply(", "tessera::dry_run(", "tessera::Options::",
          "tessera::Result::", "tessera::Plan::", "tessera::Matrix::", "tessera::DistributedMatrix::", "tessera::block_span(", "tessera::MultiplyError::", "tessera::VerificationFailed::",
          "typeinfo for tessera::MultiplyError", "typeinfo for tessera::VerificationFailed",
          "typeinfo name for tessera::MultiplyError", "typeinfo name for tessera::VerificationFailed",
          "vtable for tessera::MultiplyError", "vtable for tessera::VerificationFailed")
# Inside the public classes, still internal.
INTERNAL = ("::Impl", "tessera::Access")
# Entry points that must be there (a version script that exports nothing would pass the rest).
REQUIRED = ("tessera::version()", "tessera::multiply(", "tessera::dry_run(", "tessera::Options::Options()",
            "tessera::Options::set(", "tessera::Result::json", "tessera::Plan::text", "tessera::Matrix::Matrix(",
            "tessera::DistributedMatrix::DistributedMatrix(", "tessera::block_span(",
            "typeinfo for tessera::MultiplyError", "tessera::MultiplyError::MultiplyError(")


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", "--demangle", lib], capture_output=True, text=True, check=True)
    names = []
    for line in out.stdout.splitlines():
        parts = line.split(None, 2)  # address, type, name
        if len(parts) == 3:
            names.append(parts[2])
    return names


def needed(readelf, lib):
    out = subprocess.run([readelf, "-d", lib], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--nm", default="nm")
    p.add_argument("--readelf", default="readelf")
    args = p.parse_args()

    names = exported(args.nm, args.lib)
    print(f"{args.lib}: {len(names)} defined dynamic symbols")
    for n in names:
        print("  " + n)
    stray = [n for n in names if not n.startswith(PUBLIC) or any(i in n for i in INTERNAL)]
    if stray:
        fail(f"{len(stray)} exported symbol(s) outside the public API, e.g. " + "; ".join(stray[:8]))
    missing = [r for r in REQUIRED if not any(n.startswith(r) for n in names)]
    if missing:
        fail("the API's entry points are not exported: " + ", ".join(missing))
    print(f"ok: all {len(names)} exported symbols are the public API's, its entry points included")

    libs = needed(args.readelf, args.lib)
    print("NEEDED: " + ", ".join(libs))
    if any("mpi_cxx" in n or "mpicxx" in n or "mpichcxx" in n for n in libs):
        fail("libtessera needs MPI's C++ bindings' library: " + ", ".join(libs))
    if not any(re.match(r"lib(mpi|mpich)\.so", n) for n in libs):
        fail("libtessera does not need MPI's C library (libmpi): " + ", ".join(libs))
    print("ok: MPI's C library needed, not its C++ bindings'")
    print("PASS")


if __name__ == "__main__":
    main()
