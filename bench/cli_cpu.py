"""Wall and CPU time of one seqx command, its worker pools included.

Usage:
    OMP_NUM_THREADS=1 .venv/bin/python bench/cli_cpu.py featurize recipes/commands.yaml --set exp_dir=/tmp/x --force

Why not `/usr/bin/time seqx ...`: the stages' workers are children of seqx.workers' fork server,
not of the command, and the server is never waited for by it, so `time` misses their CPU (a
2-worker speech-embedding featurize: 2.2 s counted of 4.7). This runs the CLI in this process and
adds the fork server's CPU, with its reaped workers', from /proc before exiting. Prints one line
on stderr after the command's own output.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.workers import forkserver_cpu_seconds  # noqa: E402


def main() -> None:
    start = time.perf_counter()
    sys.argv = ["seqx", *sys.argv[1:]]
    from seqx.cli.app import main as seqx_main

    code: object = 0
    try:
        seqx_main()
    except SystemExit as done:
        code = done.code
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + forkserver_cpu_seconds()
    wall = time.perf_counter() - start
    print(f"wall {wall:.2f} s, CPU {cpu:.2f} s (fork server and workers included), "
          f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr)  # fmt: skip
    sys.exit(code)


if __name__ == "__main__":
    main()
