"""tessera from Python: run the distributed matrix multiply (C = A·B, HDF5 in and out) on MPI
ranks and read its report.

    import tessera
    report = tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", ranks=4, backend="cpu")
    report.wall_seconds, report.grid, report.ranks[0].phases["compute"]
    report.to_pandas()                      # one row per rank (needs pandas)
    plan = tessera.dry_run(m=8192, n=8192, k=8192, ranks=64)

Failures raise TesseraError (UsageError, VerificationError) with tessera's message and exit status.
"""
from .api import dry_run, run
from .binary import find_binary
from .errors import TesseraError, UsageError, VerificationError
from .launch import launcher_prefix
from .report import DryRun, Grid, Provenance, RankPlan, RankRecord, Report, Shape

__version__ = "0.1.0"

__all__ = ["run", "dry_run", "find_binary", "launcher_prefix", "Report", "RankRecord", "DryRun", "RankPlan", "Provenance",
           "Shape", "Grid", "TesseraError", "UsageError", "VerificationError", "__version__"]
