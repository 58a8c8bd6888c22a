"""Help text for workload option keys that their options models do not document.

The scenario file schema (``scenario_schema``) gives every key a description. It takes a
field's own documentation first (``Field(description=...)`` or the docstring under the
field); for a workload key without one it looks here: ``BY_MODEL_KEY`` (``"Model.key"``,
for a key whose meaning is particular to one workload), then ``BY_KEY`` (names several
workloads share with one meaning: ``duration``, ``port``, ``request`` ...). A new workload
whose keys are documented in its options model needs nothing here.
"""

from __future__ import annotations

BY_KEY: dict[str, str] = {
    "port": "Port the workload's server listens on, inside the server node.",
    "duration": "How long each measurement runs (e.g. 5s, 500ms).",
    "warmup": "Untimed time before the measurement (e.g. 1s); its results are discarded.",
    "protocol": "Transport protocol: tcp or udp.",
    "request": "Bytes the client sends per transaction (e.g. 100, 1k, 64k).",
    "response": "Bytes the server answers per transaction (e.g. 200, 1k).",
    "streams": "Parallel streams (flows) at once.",
    "timeout": "Longest a run of the workload may take before it is stopped and fails.",
}

BY_MODEL_KEY: dict[str, str] = {
    "RrOptions.burst": "Transactions kept in flight at once (1 = one request, then wait).",
    "StreamOptions.send_size": "Bytes per send call (default: the probe's; TCP at most 64 MiB, "
                               "UDP one datagram).",
    "StreamOptions.bitrate": "UDP only: offered rate per stream, in bits per second "
                             "(e.g. 300mbit, or bytes per second as 10MB/s); default: as fast "
                             "as possible.",
    "GapsOptions.rate": "Messages per second the client sends (constant rate).",
    "GapsOptions.size": "Bytes per UDP message (32 .. 65507).",
    "BarrierOptions.rounds": "Barrier rounds to run (default 1000 unless a duration is given).",
    "BarrierOptions.duration": "Run barriers for this long instead of a number of rounds.",
    "BarrierOptions.connect_timeout": "How long ranks wait for each other to connect.",
    "MediaOptions.bitrate": "Bit rate of every stream (e.g. 2mbit, or 250kB/s).",
    "MediaOptions.packet_size": "Bytes per UDP packet (1316 = 7 MPEG-TS packets).",
    "OltpOptions.tables": "sysbench tables to create and query.",
    "OltpOptions.table_size": "Rows per table.",
    "OltpOptions.threads": "sysbench threads per client node.",
    "OltpOptions.warmup": "A discarded run of this length before the measured one.",
    "OltpOptions.clients": "Client nodes running sysbench at once (nodes 1 .. clients).",
    "OltpOptions.port": "Port MariaDB listens on, inside the server node.",
    "OltpOptions.buffer_pool": "InnoDB buffer pool size (e.g. 64M).",
    "MpiOptions.test": "Micro-benchmark (pingpong, barrier, allreduce, gaps) or NAS kernel "
                       "(cg, lu, sp, bt, mg, ft, is).",
    "MpiOptions.duration": "Micro-benchmarks: run for this long instead of a number of "
                           "iterations.",
    "MpiOptions.timeout": "Longest an MPI run may take (launch included) before it fails.",
    "HadoopOptions.benchmarks": "Benchmarks to run, in this order, on one cluster per trial; "
                                "terasort needs teragen before it, teravalidate terasort.",
    "HadoopOptions.data": "TeraGen data size (default for dfsio and wordcount), e.g. 100MB.",
    "HadoopOptions.replication": "HDFS replication factor.",
    "HadoopOptions.block_size": "HDFS block size (e.g. 16M), or auto: a power of two up to "
                                "data / (2 x workers).",
    "HadoopOptions.io_buffer": "io.file.buffer.size (e.g. 128k).",
    "HadoopOptions.map_memory": "Memory of a map container (at least 256M).",
    "HadoopOptions.reduce_memory": "Memory of a reduce container (at least 256M).",
    "HadoopOptions.am_memory": "Memory of the MapReduce application master (at least 256M).",
    "HadoopOptions.containers_per_worker": "YARN containers each worker node offers.",
    "HadoopOptions.jobhistory": "Also start the MapReduce job history server.",
    "HadoopOptions.base_port": "First of the ports the Hadoop daemons listen on.",
    "HadoopOptions.start_timeout": "Longest the cluster may take to start.",
    "HadoopOptions.job_timeout": "Longest one benchmark job may take.",
    "HadoopOptions.dfsio": "TestDFSIO options (write then read).",
    "HadoopOptions.wordcount": "WordCount options.",
    "HadoopOptions.nnbench": "NNBench options (NameNode metadata load).",
    "HadoopOptions.mrbench": "MRBench options (many small jobs).",
    "HadoopOptions.pi": "QuasiMonteCarlo Pi options.",
    "DfsioOptions.files": "Files to write and read (default: 2 per worker).",
    "DfsioOptions.file_size": "Size of each file (default: data / files), e.g. 25MB.",
    "WordcountOptions.size": "Text to generate and count (default: data).",
    "WordcountOptions.reduces": "Reduce tasks (default: Hadoop's).",
    "NnbenchOptions.files": "Files each map creates.",
    "NnbenchOptions.maps": "Map tasks.",
    "NnbenchOptions.reduces": "Reduce tasks.",
    "MrbenchOptions.runs": "Small jobs run one after another.",
    "MrbenchOptions.maps": "Map tasks per job.",
    "MrbenchOptions.reduces": "Reduce tasks per job.",
    "MrbenchOptions.lines": "Input lines per job.",
    "PiOptions.maps": "Map tasks.",
    "PiOptions.samples": "Samples per map.",
}
