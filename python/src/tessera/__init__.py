"""tessera from Python: run the distributed matrix multiply (C = A·B, HDF5 in and out) on MPI
ranks and read its report.

    import tessera
    report = tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", ranks=4, backend="cpu")
    report.wall_seconds, report.grid, report.ranks[0].phases["compute"]
    report.to_pandas()                      # one row per rank (needs pandas)
    c = tessera.matmul(a, b)                # numpy arrays in this process (libtessera; no file, no MPI)
    c_block = tessera.matmul_blocks(a_block, b_block, comm=MPI.COMM_WORLD, ...)   # distributed, mpi4py
    plan = tessera.dry_run(m=8192, n=8192, k=8192, ranks=64)
    tessera.generate("a.h5:/A", rows=1000, cols=800, dtype="f64", seed=1)
    tessera.verify("a.h5:/A", "b.h5:/B", "c.h5:/C", ranks=2)   # Freivalds' test; true when C passed
    RunOptions = tessera.options_type("run")   # a dataclass made from `tessera run --help-json`

One rank runs the binary alone (an MPI singleton, no mpirun) outside a Slurm allocation.

Failures raise TesseraError (UsageError, VerificationError) with tessera's message and exit status;
an option the command lacks, or a value of the wrong type, raises OptionError (a UsageError)
before anything runs.
"""
from .api import dry_run, generate, run, verify
from .binary import CommandSpec, OptionSpec, command_spec, find_binary
from .errors import TesseraError, UsageError, VerificationError
from .launch import launcher_prefix
from .matmul import block_span, matmul, matmul_blocks
from .report import DryRun, Grid, Provenance, RankPlan, RankRecord, Report, Shape
from .results import Generated, Verification
from .typed import OptionError, options_type

__version__ = "0.1.0"

__all__ = ["run", "matmul", "matmul_blocks", "block_span", "dry_run", "generate", "verify", "options_type", "command_spec", "find_binary", "launcher_prefix",
           "Report", "RankRecord", "DryRun", "RankPlan", "Provenance", "Shape", "Grid", "Generated", "Verification",
           "CommandSpec", "OptionSpec", "TesseraError", "UsageError", "OptionError", "VerificationError",
           "__version__"]
