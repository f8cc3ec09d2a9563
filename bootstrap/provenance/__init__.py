"""Where a job came from: the app's git state, the installed packages, the host, the container and the GPU
driver (the report's ``provenance``; docs/report.md#provenance).

- :mod:`.git`: the app's repository, read with bounded, local-only git commands;
- :mod:`.packages`: every installed distribution as ``name==version``, and what changed between two lists;
- :mod:`.machine`: the host's name, the container it runs in, the NVIDIA driver;
- :mod:`.collect`: all of it in a thread after the job has started, once per process, and its files
  (``git.diff``, ``packages.txt``) written into the job's directory through the way out.
"""
