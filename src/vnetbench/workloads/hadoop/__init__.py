"""The ``hadoop`` workload: a real Apache Hadoop 3.4.2 cluster (HDFS + YARN + MapReduce).

A hadoop scenario's lab has ``nodes + 1`` nodes: ``nodes`` counts the workers and
``lab.nodes[0]`` is the extra master (``EXTRA_NODES``). Modules: ``options`` (scenario
options), ``config`` (pure: ports, memory plan, site XML), ``install`` (the jar cache),
``cluster`` (start/readiness/stop), ``enter`` (per-node hostname and hosts file),
``parse`` (tool outputs), ``benchmarks`` (TeraGen/TeraSort/TeraValidate, TestDFSIO,
WordCount, NNBench, MRBench, Pi), ``workload`` (the Workload and ``HADOOP_WORKLOADS``),
``cds`` (the class-data-sharing archive built at set-up); ``pom.xml`` lists the jars.
"""

EXTRA_NODES = 1
"""Nodes a hadoop lab has beyond the scenario's ``nodes`` (the master); also
``HadoopOptions.extra_nodes``, so a runner can ask any workload's options model."""
