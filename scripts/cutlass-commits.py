#!/usr/bin/env python3
"""Remakes cuda_toolchain::cutlass::COMMITS: which NVIDIA/cutlass commits have
exactly the headers of an nvidia-cutlass wheel.

    scripts/cutlass-commits.py CUTLASS_GIT_DIR WHEEL_DIR...

CUTLASS_GIT_DIR: a clone (or bare mirror) of github.com/NVIDIA/cutlass.
WHEEL_DIR: an unpacked nvidia-cutlass wheel, as `cargo cuda deps fetch
--cutlass X.Y.Z` leaves it in the store (<store>/deps/nvidia-cutlass/<version>,
with dep.json), one per release to check.

A commit is listed when its `include/` and `tools/util/include/` trees equal
the wheel's `cutlass_library/source/include/` and
`cutlass_library/source/tools/util/include/`, blob hash by blob hash, with no
file missing or extra. Prints Rust tuples for COMMITS, sorted by commit, with
`// tag vX` where a tag points at the commit. Reads only; no network.
"""
import hashlib
import json
import os
import subprocess
import sys

TREES = ("include", "tools/util/include")


def blob(path):
    data = open(path, "rb").read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def wheel_tree(d):
    files = {}
    for tree in TREES:
        root = os.path.join(d, "cutlass_library", "source", tree)
        for dirpath, _, names in os.walk(root):
            for n in names:
                p = os.path.join(dirpath, n)
                files[tree + "/" + os.path.relpath(p, root)] = blob(p)
    return frozenset(files.items())


def git(repo, *args):
    return subprocess.run(
        ["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True, timeout=600
    ).stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    repo = sys.argv[1]
    if os.path.isdir(os.path.join(repo, ".git")):
        repo = os.path.join(repo, ".git")
    wheels = {}
    for d in sys.argv[2:]:
        version = json.load(open(os.path.join(d, "dep.json")))["version"]
        wheels[wheel_tree(d)] = version
    tags = {}
    for line in git(repo, "show-ref", "--tags", "-d").splitlines():
        sha, ref = line.split()
        tags[sha] = ref.removeprefix("refs/tags/").removesuffix("^{}")
    found = []
    for commit in git(repo, "rev-list", "--all").split():
        listing = git(repo, "ls-tree", "-r", commit, "--", *TREES)
        files = frozenset(
            (line.split("\t", 1)[1], line.split()[2])
            for line in listing.splitlines()
            if line.split()[1] == "blob"
        )
        if files in wheels:
            found.append((commit, wheels[files]))
    for commit, version in sorted(found):
        tag = f" // tag {tags[commit]}" if commit in tags else ""
        print(f'    ("{commit}", "{version}"),{tag}')
    print(f"{len(found)} commits of {len(wheels)} release(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
