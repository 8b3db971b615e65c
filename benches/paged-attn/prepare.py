"""Rewrites a copy of mistralrs-paged-attn 0.8.1's Cargo.toml for the bench:
the package as published, with only the build dependencies of one variant
(cudaforge as published, or cuda-build from this repo) and its own workspace.
The library's other dependencies (candle, float8, half) are not needed to
build the kernels, and candle's CUDA build would dominate the timings.

Usage: prepare.py <Cargo.toml> cudaforge|cuda-build <repo>
"""
import re
import sys

path, variant, repo = sys.argv[1:4]
text = open(path).read()
package = text.split("\n[features]")[0]
package = re.sub(r"\n\[lib\][^\[]*", "\n", package)
package = re.sub(r"\n\[(build-)?dependencies[^\]]*\][^\[]*", "\n", package)
if variant == "cudaforge":
    deps = '[build-dependencies]\nanyhow = "1.0.100"\ncudaforge = "=0.1.6"\n\n[features]\ndefault = ["cuda"]\ncuda = []\n'
else:
    deps = f'[build-dependencies]\ncuda-build = {{ path = "{repo}/cuda-build" }}\n'
out = package.rstrip() + '\n\n[lib]\npath = "src/lib.rs"\n\n' + deps + "\n[workspace]\n"
open(path + ".tmp", "w").write(out)
import os
os.replace(path + ".tmp", path)
