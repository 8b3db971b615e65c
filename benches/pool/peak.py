#!/usr/bin/env python3
"""Runs a command and reports its wall time and the peak of the summed
resident memory of its whole process tree (every descendant, sampled every
0.1 s from /proc). Prints `wall_s peak_bytes` on the last line of stderr, or
into the file named by PEAK_OUT.

    benches/pool/peak.py cargo build
"""
import os
import subprocess
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree_rss(root):
    total, stack, seen = 0, [root], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        stack.extend(children(p))
    return total


def main():
    t0 = time.monotonic()
    child = subprocess.Popen(sys.argv[1:])
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        time.sleep(0.1)
    wall = time.monotonic() - t0
    line = f"{wall:.2f} {peak}\n"
    out = os.environ.get("PEAK_OUT")
    if out:
        with open(out, "w") as f:
            f.write(line)
    else:
        sys.stderr.write(line)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
