"""Options of the ``hadoop`` workload (a scenario's ``workloads: [{hadoop: {...}}]``).

    hadoop:
      benchmarks: [teragen, terasort, teravalidate, dfsio, wordcount, nnbench, mrbench, pi]
      data: 100MB                 # TeraGen size; default for dfsio and wordcount
      replication: 2
      block_size: auto            # or e.g. 16M; auto = power of two <= data/(2*workers)
      dfsio: {files: 4, file_size: 25MB}
      pi: {maps: 2, samples: 1000}

Benchmarks run in the order given, on one cluster per trial (started in ``prepare``).
``terasort`` sorts what ``teragen`` wrote and ``teravalidate`` checks it: each needs its
predecessor earlier in the list; ``dfsio`` runs write then read.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vnetbench.host.state import DISK_WORK_ROOT
from vnetbench.units import Duration, Size
from vnetbench.workloads.base import WorkloadOptions

Benchmark = Literal["teragen", "terasort", "teravalidate", "dfsio", "wordcount", "nnbench",
                    "mrbench", "pi"]
BENCHMARKS: tuple[str, ...] = ("teragen", "terasort", "teravalidate", "dfsio", "wordcount",
                               "nnbench", "mrbench", "pi")

MiB = 1024 * 1024
JAVA_INT_MAX = 2**31 - 1
"""The largest Java ``int``: counts Hadoop reads with ``Integer.parseInt``/``getInt`` (maps,
reduces, files, runs, lines, ``io.file.buffer.size``) can be no more."""
JAVA_LONG_MAX = 2**63 - 1
"""The largest Java ``long`` (pi's samples, read with ``Long.parseLong``)."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DfsioOptions(_Part):
    """TestDFSIO: ``files`` files of ``file_size`` each (default: 2 per worker, data/files)."""

    files: int | None = Field(None, ge=1, le=10000)
    file_size: Size | None = Field(None, ge=MiB)


class WordcountOptions(_Part):
    """WordCount over text generated locally (default size: ``data``)."""

    size: Size | None = Field(None, ge=1024)
    reduces: int | None = Field(None, ge=1, le=JAVA_INT_MAX)


class NnbenchOptions(_Part):
    """NNBench create_write (NameNode metadata load): files per map."""

    files: int = Field(100, ge=1, le=JAVA_INT_MAX)
    maps: int = Field(2, ge=1, le=JAVA_INT_MAX)
    reduces: int = Field(1, ge=1, le=JAVA_INT_MAX)


class MrbenchOptions(_Part):
    """MRBench: ``runs`` small jobs in a row."""

    runs: int = Field(2, ge=1, le=JAVA_INT_MAX)
    maps: int = Field(2, ge=1, le=JAVA_INT_MAX)
    reduces: int = Field(1, ge=1, le=JAVA_INT_MAX)
    lines: int = Field(1, ge=1, le=JAVA_INT_MAX)


class PiOptions(_Part):
    """QuasiMonteCarlo Pi: ``maps`` x ``samples``."""

    maps: int = Field(2, ge=1, le=JAVA_INT_MAX)
    samples: int = Field(1000, ge=1, le=JAVA_LONG_MAX)


class HadoopOptions(WorkloadOptions):
    """A Hadoop 3.4.2 cluster (master + workers) and the benchmarks to run on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    extra_nodes: ClassVar[int] = 1
    """Lab nodes beyond the scenario's ``nodes`` (which counts workers): the master."""
    many_threaded: ClassVar[bool] = True
    rotates: ClassVar[bool] = False
    """A Hadoop cluster per lab alive at once would not fit a small host, and its data
    outlives a run: measured in trial blocks (a lab per trial)."""

    benchmarks: tuple[Benchmark, ...] = ("teragen", "terasort", "teravalidate")
    data: Size = Field(100 * 1000 * 1000, ge=MiB)
    replication: int = Field(2, ge=1, le=16)
    block_size: Size | Literal["auto"] = "auto"
    io_buffer: Size = Field(131072, ge=4096, le=JAVA_INT_MAX)
    map_memory: Size = Field(384 * MiB, ge=256 * MiB)
    reduce_memory: Size = Field(384 * MiB, ge=256 * MiB)
    am_memory: Size = Field(384 * MiB, ge=256 * MiB)
    containers_per_worker: int = Field(2, ge=1, le=32)
    maps: int | None = Field(None, ge=1, le=JAVA_INT_MAX,
                             description="TeraGen maps (default: 1 per worker)")
    reduces: int | None = Field(None, ge=1, le=JAVA_INT_MAX,
                                description="TeraSort reduces (default: 1 per worker)")
    jobhistory: bool = False
    base_port: int = Field(20000, ge=1024, le=40000)
    data_root: str = str(DISK_WORK_ROOT)
    """Directory for the cluster's on-disk state (``<data_root>/<run id>/hadoop``): an
    absolute path; the run records ``<data_root>/<run id>`` in its state file, so
    ``vnetbench clean`` removes it after a killed run."""
    properties: dict[str, str] = Field(default_factory=dict,
                                       description="extra Hadoop properties (override ours)")
    start_timeout: Duration = Field(300.0, gt=0)
    job_timeout: Duration = Field(1800.0, gt=0)
    dfsio: DfsioOptions = DfsioOptions.model_validate({})
    wordcount: WordcountOptions = WordcountOptions.model_validate({})
    nnbench: NnbenchOptions = NnbenchOptions.model_validate({})
    mrbench: MrbenchOptions = MrbenchOptions.model_validate({})
    pi: PiOptions = PiOptions.model_validate({})

    @field_validator("data_root")
    @classmethod
    def _absolute(cls, value: str) -> str:
        path = Path(value)
        if not path.is_absolute():
            raise ValueError(f"{value[:60]!r} is not an absolute path; give one such as "
                             f"{DISK_WORK_ROOT} (the default)")
        if path.exists() and not path.is_dir():
            raise ValueError(f"{value[:60]!r} exists and is not a directory")
        if path.parts[1:2] in (("proc",), ("sys",), ("dev",)):
            raise ValueError(f"{value[:60]!r} is under /{path.parts[1]}; give a directory on disk")
        return value

    @field_validator("block_size")
    @classmethod
    def _block_multiple(cls, value: int | str) -> int | str:
        if isinstance(value, int) and (value < MiB or value % 512):
            raise ValueError("block_size must be at least 1M and a multiple of 512 bytes")
        return value

    @model_validator(mode="after")
    def _order(self) -> HadoopOptions:
        if not self.benchmarks:
            raise ValueError("benchmarks: give at least one of " + ", ".join(BENCHMARKS))
        if len(set(self.benchmarks)) != len(self.benchmarks):
            raise ValueError("benchmarks: each benchmark at most once")
        for later, earlier in (("terasort", "teragen"), ("teravalidate", "terasort")):
            if later in self.benchmarks and (
                    earlier not in self.benchmarks
                    or self.benchmarks.index(earlier) > self.benchmarks.index(later)):
                raise ValueError(f"benchmarks: {later} needs {earlier} before it")
        return self
