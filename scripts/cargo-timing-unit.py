#!/usr/bin/env python3
"""Seconds one unit took in a `cargo build --timings` report.

Usage: cargo-timing-unit.py REPORT.html PACKAGE [TARGET]
TARGET as cargo's report names it: "build-script (run)" (the default),
"build-script", or "" for the library. The bench scripts use it for how
long a build script ran: the part of a build a kernel cache can remove.
"""
import json
import re
import sys

if len(sys.argv) not in (3, 4):
    sys.exit(__doc__)
report, package = sys.argv[1], sys.argv[2]
target = sys.argv[3] if len(sys.argv) == 4 else "build-script (run)"
text = open(report, encoding="utf-8").read()
match = re.search(r"const UNIT_DATA = (\[.*?\]);", text, re.S)
if not match:
    sys.exit(f"cargo-timing-unit: no unit data in {report} (not a cargo --timings report?)")
for unit in json.loads(match.group(1)):
    if unit["name"] == package and unit.get("target", "").strip() == target:
        print(f"{unit['duration']:.2f}")
        break
else:
    sys.exit(f"cargo-timing-unit: no unit {package!r} {target!r} in {report}")
