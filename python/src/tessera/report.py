"""tessera's JSON reports as Python objects (docs/report.md): `Report` for `tessera run --report`,
`DryRun` for `tessera run --dry-run --report`. Typed fields for what the schema documents; any
field missing from an older or newer tessera is None, and the whole JSON stays in `.raw`."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional


class Shape(NamedTuple):
    """C is m x n, A is m x k, B is k x n."""
    m: int
    n: int
    k: int


class Grid(NamedTuple):
    """The process grid pr x pc."""
    rows: int
    cols: int

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols}"


def _get(d: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d


def _shape(d: Any) -> Optional[Shape]:
    s = _get(d, "shape")
    return Shape(s["m"], s["n"], s["k"]) if isinstance(s, dict) and {"m", "n", "k"} <= s.keys() else None


def _grid(d: Any) -> Optional[Grid]:
    g = _get(d, "grid")
    return Grid(g["rows"], g["cols"]) if isinstance(g, dict) and {"rows", "cols"} <= g.keys() else None


def _pair(v: Any) -> Optional[tuple]:
    return tuple(v) if isinstance(v, (list, tuple)) and len(v) == 2 else None


def _seconds(v: Any) -> Optional[float]:
    """A phase's seconds: a number, or from a summary of repeated runs (its median)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, dict):
        for key in ("median", "seconds", "mean", "min"):
            if isinstance(v.get(key), (int, float)):
                return float(v[key])
    return None


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("to_pandas() needs pandas, which is not installed: pip install pandas "
                          "(or read .ranks / .raw without it)") from e
    return pandas


@dataclass
class Provenance:
    """How a report was made (docs/report.md, "provenance"): the command line and the options given,
    tessera's version and git id, the libraries it ran with, the Slurm job, the hosts and the GPU
    each rank used. Indexing (`prov["git_id"]`) reads the JSON as it is, for any other key."""
    command_line: List[str]
    options: Dict[str, Any]
    tessera_version: Optional[str]
    git_id: Optional[str]
    build_type: Optional[str]
    libraries: Dict[str, Optional[str]]
    slurm_job_id: Optional[str]
    hosts: List[str]
    gpus: List[Dict[str, Any]]  # rank, host, device_id, name, uuid, pci_bus_id of each GPU used
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, d: Any) -> Optional["Provenance"]:
        if not isinstance(d, dict):
            return None
        return cls(command_line=list(d.get("command_line") or []), options=dict(d.get("options") or {}),
                   tessera_version=d.get("tessera_version"), git_id=d.get("git_id"), build_type=d.get("build_type"),
                   libraries=dict(d.get("libraries") or {}), slurm_job_id=d.get("slurm_job_id"),
                   hosts=list(d.get("hosts") or []), gpus=list(d.get("gpus") or []), raw=d)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


@dataclass
class RankRecord:
    """One rank of a run: its block of C, device, work and the seconds of each phase."""
    rank: int
    host: Optional[str]
    device: Optional[str]
    device_id: Optional[int]
    active: bool
    block: Optional[tuple]  # (i, j) of C's grid; None when idle
    rows: Optional[tuple]  # half-open range of C's rows
    cols: Optional[tuple]  # half-open range of C's columns
    flops: Optional[float]
    gflops: Optional[float]
    phases: Dict[str, float]  # seconds per phase, in the order they ran
    startup_seconds: Optional[float]
    peak_host_bytes: Optional[int]
    peak_gpu_bytes: Optional[int]
    warnings: List[str]
    baseline: Optional[Dict[str, Any]]
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RankRecord":
        phases_raw = d.get("phases") or {}
        order = [p for p in d.get("phase_order") or [] if p in phases_raw]
        order += [p for p in phases_raw if p not in order]
        phases: Dict[str, float] = {}
        for p in order:
            s = _seconds(phases_raw[p])
            if s is not None:
                phases[p] = s
        block = d.get("block")
        block = (block["row"], block["col"]) if isinstance(block, dict) and block.get("row", -1) >= 0 else None
        return cls(rank=d.get("rank", -1), host=d.get("host"), device=d.get("device"), device_id=d.get("device_id"),
                   active=bool(d.get("active", True)), block=block, rows=_pair(d.get("rows")),
                   cols=_pair(d.get("cols")), flops=d.get("flops"), gflops=d.get("gflops"), phases=phases,
                   startup_seconds=d.get("startup_seconds"), peak_host_bytes=d.get("peak_host_bytes"),
                   peak_gpu_bytes=d.get("peak_gpu_bytes"), warnings=list(d.get("warnings") or []),
                   baseline=d.get("baseline"), raw=d)

    def row(self) -> Dict[str, Any]:
        """This rank as one flat table row (phases as columns, named as in the report)."""
        out = {"rank": self.rank, "host": self.host, "device": self.device, "device_id": self.device_id,
               "active": self.active, "block_row": self.block[0] if self.block else None,
               "block_col": self.block[1] if self.block else None,
               "row_begin": self.rows[0] if self.rows else None, "row_end": self.rows[1] if self.rows else None,
               "col_begin": self.cols[0] if self.cols else None, "col_end": self.cols[1] if self.cols else None,
               "flops": self.flops, "gflops": self.gflops, "startup_seconds": self.startup_seconds,
               "peak_host_bytes": self.peak_host_bytes, "peak_gpu_bytes": self.peak_gpu_bytes}
        for phase, seconds in self.phases.items():
            out[phase if phase not in out else f"phase_{phase}"] = seconds
        return out


@dataclass
class Report:
    """A run's report (docs/report.md): the job, its totals and one RankRecord per rank."""
    schema: Optional[str]
    tessera_version: Optional[str]
    started_at: Optional[str]
    a: Optional[str]
    b: Optional[str]
    c: Optional[str]
    shape: Optional[Shape]
    dtype: Optional[str]
    algorithm: Optional[str]
    comm: Optional[str]
    backend: Optional[str]
    kernel: Optional[str]
    grid: Optional[Grid]
    nranks: Optional[int]
    write: Optional[str]
    stream_chunks: Optional[int]
    wall_seconds: Optional[float]
    flops: Optional[float]
    aggregate_gflops: Optional[float]
    max_compute_seconds: Optional[float]
    mean_compute_seconds: Optional[float]
    load_imbalance: Optional[float]
    verification: Optional[Dict[str, Any]]
    # --repeat / --warmup: the `repeats` block as in the JSON (runs, warmup, wall_seconds with its
    # samples, phases, ranks; docs/report.md); None for a single run. The other fields: the last run.
    repeats: Optional[Dict[str, Any]]
    provenance: Optional[Provenance]  # None in reports of a tessera before it
    warnings: List[str]  # the job's, else every rank's, each once
    ranks: List[RankRecord]
    raw: Dict[str, Any] = field(repr=False)
    # Many products in one launch (a pattern or a manifest; the JSON's "kind": "products"): each
    # product's own report, in the launch's order (a failed product has none: see raw["products"]).
    products: List["Report"] = field(default_factory=list, repr=False)
    # How it ran (set by tessera.run; empty when read from a file).
    command: List[str] = field(default_factory=list, repr=False)
    stdout: str = field(default="", repr=False)
    stderr: str = field(default="", repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Report":
        ranks = [RankRecord.from_json(r) for r in d.get("ranks") or [] if isinstance(r, dict)]
        warnings = d.get("warnings")
        if not isinstance(warnings, list):
            warnings = list(dict.fromkeys(w for r in ranks for w in r.warnings))
        return cls(schema=d.get("schema"), tessera_version=d.get("tessera_version"), started_at=d.get("started_at"),
                   a=_get(d, "inputs", "a"), b=_get(d, "inputs", "b"), c=d.get("output"), shape=_shape(d),
                   dtype=d.get("dtype"), algorithm=d.get("algorithm"), comm=d.get("comm"), backend=d.get("backend"),
                   kernel=d.get("kernel"), grid=_grid(d), nranks=d.get("nranks"), write=d.get("write"),
                   stream_chunks=d.get("stream_chunks"), wall_seconds=_seconds(_get(d, "totals", "wall_seconds")),
                   flops=_get(d, "totals", "flops"), aggregate_gflops=_get(d, "totals", "aggregate_gflops"),
                   max_compute_seconds=_get(d, "totals", "max_compute_seconds"),
                   mean_compute_seconds=_get(d, "totals", "mean_compute_seconds"),
                   load_imbalance=_get(d, "totals", "load_imbalance"), verification=d.get("verification"),
                   repeats=d.get("repeats") if isinstance(d.get("repeats"), dict) else None, provenance=Provenance.from_json(d.get("provenance")), warnings=list(warnings), ranks=ranks,
                   raw=d, products=[cls.from_json(p["report"]) for p in d.get("products") or []
                                    if isinstance(p, dict) and isinstance(p.get("report"), dict)])

    @classmethod
    def load(cls, path) -> "Report":
        """A report tessera wrote (`--report FILE.json`)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(json.load(f))

    @property
    def phases(self) -> List[str]:
        """Every phase any rank reported, in the order they ran."""
        return list(dict.fromkeys(p for r in self.ranks for p in r.phases))

    def to_pandas(self):
        """One row per rank, indexed by rank: host, device, block, ranges, flops, GFLOP/s, memory
        peaks and one column per phase (seconds; NaN where a rank had no such phase).
        Needs pandas (ImportError otherwise)."""
        pandas = _pandas()
        rows = [r.row() for r in self.ranks]
        frame = pandas.DataFrame(rows)
        if rows:
            frame = frame.set_index("rank")
        return frame


@dataclass
class RankPlan:
    """A rank's share of a planned job (rank 0, or the largest other rank)."""
    rows: Optional[int]
    cols: Optional[int]
    host_bytes: Optional[int]
    gpu_bytes: Optional[int]
    read_bytes: Optional[int]
    recv_bytes: Optional[int]
    send_bytes: Optional[int]
    seconds: Optional[float]
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, d: Any) -> Optional["RankPlan"]:
        if not isinstance(d, dict):
            return None
        return cls(**{k: d.get(k) for k in ("rows", "cols", "host_bytes", "gpu_bytes", "read_bytes", "recv_bytes",
                                             "send_bytes", "seconds")}, raw=d)


@dataclass
class DryRun:
    """What `tessera run --dry-run` planned: algorithm, grid, memory, traffic and predicted time."""
    schema: Optional[str]
    algorithm: Optional[str]
    comm: Optional[str]
    grid: Optional[Grid]
    ranks: Optional[int]
    idle_ranks: Optional[int]
    shape: Optional[Shape]
    dtype: Optional[str]
    backend: Optional[str]
    predicted_seconds: Optional[float]
    total_read_bytes: Optional[int]
    total_comm_bytes: Optional[int]
    max_send_bytes: Optional[int]
    max_recv_bytes: Optional[int]
    rank0: Optional[RankPlan]
    largest: Optional[RankPlan]
    provenance: Optional[Provenance] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    command: List[str] = field(default_factory=list, repr=False)
    stdout: str = field(default="", repr=False)  # the plan as tessera prints it
    stderr: str = field(default="", repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DryRun":
        return cls(schema=d.get("schema"), algorithm=d.get("algorithm"), comm=d.get("comm"), grid=_grid(d),
                   ranks=d.get("ranks"), idle_ranks=d.get("idle_ranks"), shape=_shape(d), dtype=d.get("dtype"),
                   backend=d.get("backend"), predicted_seconds=d.get("predicted_seconds"),
                   total_read_bytes=d.get("total_read_bytes"), total_comm_bytes=d.get("total_comm_bytes"),
                   max_send_bytes=d.get("max_send_bytes"), max_recv_bytes=d.get("max_recv_bytes"),
                   rank0=RankPlan.from_json(d.get("rank0")), largest=RankPlan.from_json(d.get("largest")),
                   provenance=Provenance.from_json(d.get("provenance")), raw=d)

    @classmethod
    def load(cls, path) -> "DryRun":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(json.load(f))

    def to_pandas(self):
        """The two planned ranks as rows ("rank0", "largest"): rows, cols and bytes held, read,
        received and sent, and predicted seconds. Needs pandas."""
        pandas = _pandas()
        plans = {name: plan for name, plan in (("rank0", self.rank0), ("largest", self.largest)) if plan}
        return pandas.DataFrame.from_dict({name: dict(plan.raw) for name, plan in plans.items()}, orient="index")

