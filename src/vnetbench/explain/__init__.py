"""Why a layer costs what it costs: the run's evidence turned into a breakdown, an attribution
and tested hypotheses.

The pipeline, one module per step:

* ``evidence``: the units of evidence of one workload (a round of interleaved slices, or a
  trial) with everything measured in them: work done, CPU by who spent it and by state, per
  core where recorded; and the windows of device, TCP and UDP counters around them.
* ``breakdown``: per layer and workload, CPU per transaction or per Gbit/s split by who and by
  state, packets and bytes per unit of work on every device crossed, drops and
  retransmissions, and the path's facts from ``run.json``.
* ``attribution``: each layer's added time or CPU against the baseline split into the parts
  each component explains (round by round where the run was paired), with the remainder and
  the noise floor it is judged against.
* ``hypotheses``: the seed studies' causes as checks (a core saturated by softirq, drops on
  bridge and veth ports behind retransmissions, the forwarder's CPU bounding throughput),
  each ``supported``, ``contradicted`` or ``not testable`` with its numbers.

Nothing here draws or writes: the report (``report/why.py``) renders what these return.
"""
