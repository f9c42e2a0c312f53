"""A shadow configuration (issue 38): a second configuration answering the same requests as the
live one, in a process of its own and off the hot path, to show what it would decide differently.

* :mod:`service`: the live side's half, handing each call over and keeping the reports.
* :mod:`worker`: the shadow's process, answering with its own extender.
* :mod:`diff`: the differences between the two answers, with both sides' reasons.
* :mod:`reports`: what the process reported, kept for the routes and the metrics.
* :mod:`sources`: plugin data sources shared with the live configuration.
* :mod:`state`: a cluster-mode session's state, handed over as a delta.
* :mod:`gate`: when the live side is idle, for the shadow to work in.
* :mod:`pipe`: the calls' bodies on the pipe to the process.
* :mod:`freed_memory`: the live process keeps freed memory for the next bodies.
"""
