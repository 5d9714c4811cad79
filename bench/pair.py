#!/usr/bin/env python3
"""Time two commands as whole processes, in turn, and take their ratio pair by pair.

    bench/pair.py [-n RUNS] [--warmup W] [--rest S] [--vs 'COMMAND_B'] -- COMMAND_A [ARG ...]

A and B run in turn (A B A B ...) RUNS times each after W warm-up rounds that are not counted;
each run's wall time is read from a monotonic clock just before the start and just after the
child is reaped, its CPU (user + system) and peak RSS from the kernel's accounting of the child
(wait4; a peak cannot read below this script's own, about 14 MB, which the child inherits
until it execs). Output goes to /dev/null; standard input is empty. Every figure is printed as min,
median and max; quote the median. The ratio A/B is taken pair by pair, so that a machine whose
speed drifts during the call still gives a meaningful ratio. COMMAND_B is split as a shell
splits words (shlex); write `sh -c '...'` for pipes or redirections.

--rest S waits S seconds (untimed) before every run, so that both commands start from the
same state (a machine at rest) rather than each straight after the other: without it, every
run of a short A follows a long B on every core, and every B follows a short A.

Without --vs, A alone is timed. Exit status: 0 when every run was started and reaped (the
commands' own exit codes are printed, not acted on), 2 on unusable arguments.
"""

import argparse
import os
import shlex
import statistics
import sys
import time

# posix_spawn (a vfork, then exec): about 0.7 ms to start and reap /bin/true here, where
# subprocess.Popen takes 3-4 ms, which would be a sixth of a 20 ms command's figure.
QUIET = [
    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
    (os.POSIX_SPAWN_DUP2, 1, 2),
]


def run(argv, rest=0.0):
    """One run: (wall seconds, CPU seconds, peak RSS in MB, exit code)."""
    if rest > 0:
        time.sleep(rest)
    t0 = time.monotonic()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=QUIET)
    _, status, usage = os.wait4(pid, 0)
    t1 = time.monotonic()
    code = os.waitstatus_to_exitcode(status)
    return t1 - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def spread(values, fmt):
    return "min " + fmt % min(values) + "  median " + fmt % statistics.median(values) + "  max " + fmt % max(values)


def report(name, argv, runs):
    walls = [r[0] for r in runs]
    cpus = [r[1] for r in runs]
    peaks = [r[2] for r in runs]
    codes = sorted({r[3] for r in runs})
    print(f"{name}: {shlex.join(argv)}")
    print(f"  wall s  {spread(walls, '%.4f')}")
    print(f"  cpu s   {spread(cpus, '%.4f')}")
    print(f"  peak MB {spread(peaks, '%.1f')}")
    print(f"  exit    {', '.join(map(str, codes))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="counted runs of each command (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first (default 1)")
    parser.add_argument("--rest", type=float, default=0.0,
                        help="seconds to wait, untimed, before every run (default 0)")
    parser.add_argument("--vs", help="the second command, B (the baseline or the yardstick)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not a or args.n < 1 or args.warmup < 0:
        parser.error("a command after --, and -n of at least 1, are needed")
    b = shlex.split(args.vs) if args.vs else None
    try:
        for _ in range(args.warmup):
            run(a)
            if b:
                run(b)
        ra, rb = [], []
        for _ in range(args.n):
            ra.append(run(a, args.rest))
            if b:
                rb.append(run(b, args.rest))
    except OSError as err:
        print(f"pair.py: cannot start the command: {err}", file=sys.stderr)
        return 2
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {args.n} runs each"
          + (f", {args.rest:g} s of rest before each" if args.rest > 0 else ""))
    report("A", a, ra)
    if b:
        report("B", b, rb)
        ratios = [x[0] / y[0] for x, y in zip(ra, rb)]
        cpu = [x[1] / y[1] for x, y in zip(ra, rb) if y[1] > 0]
        print(f"A/B wall, pair by pair: {spread(ratios, '%.4f')}"
              f"  (B/A: {1 / statistics.median(ratios):.1f}x)")
        if cpu:
            print(f"A/B cpu,  pair by pair: {spread(cpu, '%.4f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
