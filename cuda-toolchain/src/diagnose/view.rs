//! What pass 2 knows while it explains: the findings (all hits of one code)
//! and the view of the machine, the context first and the log second. The
//! explainers in explain.rs and in the per-topic files read these; they sit
//! below all of them so imports point one way.

use super::codes::Code;
use super::scan::{Fact, Scan};
use super::Context;
use crate::facts::{self, CudaVersion};
use crate::probe::{GpuInfo, Platform};
use crate::toolkit::Toolkit;

/// All hits of one code.
pub(super) struct Finding {
    pub code: Code,
    pub offset: usize,
    pub evidence: Vec<String>,
    pub facts: Vec<Fact>,
    pub confidence: f32,
}

impl Finding {
    /// The symbol or option its rule read (`Fact::Symbol`).
    pub(super) fn symbol(&self) -> Option<&str> {
        self.facts.iter().find_map(|x| match x {
            Fact::Symbol(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// The value its rule read for the code's explainer (`Fact::Text`).
    pub(super) fn text(&self) -> Option<&str> {
        self.facts.iter().find_map(|x| match x {
            Fact::Text(t) => Some(t.as_str()),
            _ => None,
        })
    }
}

/// What is known about the machine: the context first, the log second.
pub(super) struct View<'a> {
    pub ctx: &'a Context,
    pub scan: &'a Scan,
}

fn v2(v: &semver::Version) -> CudaVersion {
    (v.major as u32, v.minor as u32)
}

pub(super) fn vs(v: (u32, u32)) -> String {
    format!("{}.{}", v.0, v.1)
}

impl View<'_> {
    pub(super) fn toolkit(&self) -> Option<&Toolkit> {
        self.ctx.selected.and_then(|i| self.ctx.toolkits.get(i))
    }

    /// The nvcc that produced the log: its own banner wins over detection.
    pub(super) fn nvcc_version(&self) -> Option<CudaVersion> {
        self.scan
            .nvcc_release
            .or_else(|| self.toolkit().and_then(|t| t.version.as_ref()).map(v2))
    }

    pub(super) fn driver_version(&self) -> Option<String> {
        self.ctx
            .probe
            .as_ref()
            .and_then(|p| p.driver.as_ref())
            .and_then(|d| d.version.clone())
            .or_else(|| self.scan.smi_driver.clone())
    }

    /// Highest CUDA the driver supports.
    pub(super) fn driver_cuda(&self) -> Option<CudaVersion> {
        self.ctx
            .probe
            .as_ref()
            .and_then(|p| p.driver.as_ref())
            .and_then(|d| d.cuda_version)
            .or(self.scan.smi_cuda)
            .or_else(|| {
                self.driver_version()
                    .and_then(|v| facts::max_cuda_for_driver(&v))
            })
    }

    pub(super) fn driver_branch(&self) -> Option<String> {
        self.driver_version()
            .map(|v| v.split('.').next().unwrap_or(&v).to_string())
    }

    pub(super) fn gpus(&self) -> &[GpuInfo] {
        self.ctx.probe.as_ref().map_or(&[], |p| p.gpus.as_slice())
    }

    pub(super) fn platform(&self) -> Option<&Platform> {
        self.ctx.probe.as_ref().map(|p| &p.platform)
    }

    pub(super) fn in_container(&self) -> Option<&str> {
        self.platform().and_then(|p| p.container.as_deref())
    }

    pub(super) fn wsl(&self) -> bool {
        self.platform().is_some_and(|p| p.wsl)
    }

    /// Installed toolkits (other than the selected one) whose version passes `ok`.
    pub(super) fn other_toolkits(
        &self,
        ok: impl Fn(CudaVersion) -> bool,
    ) -> Vec<(CudaVersion, &Toolkit)> {
        let selected = self.toolkit().map(|t| &t.root);
        let mut out: Vec<_> = self
            .ctx
            .toolkits
            .iter()
            .filter(|t| Some(&t.root) != selected && !t.is_broken())
            .filter_map(|t| t.version.as_ref().map(|v| (v2(v), t)))
            .filter(|(v, _)| ok(*v))
            .collect();
        out.sort_by_key(|t| std::cmp::Reverse(t.0));
        out.dedup_by(|a, b| a.1.root == b.1.root);
        out
    }

    /// "CUDA 12.4 is installed at /usr/local/cuda-12.4: set CUDA_HOME=/usr/local/cuda-12.4".
    pub(super) fn use_toolkit_fixes(
        &self,
        ok: impl Fn(CudaVersion) -> bool,
        why: &str,
    ) -> Vec<String> {
        self.other_toolkits(ok)
            .into_iter()
            .take(2)
            .map(|(v, t)| {
                format!(
                    "CUDA {} is installed at {}{why}: set CUDA_HOME={}",
                    vs(v),
                    t.root.display(),
                    t.root.display()
                )
            })
            .collect()
    }

    pub(super) fn gpu_list(&self) -> String {
        self.gpus()
            .iter()
            .map(|g| format!("{} (sm_{})", g.name, g.compute_capability.number()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Adds `s` unless it is empty or already there.
pub(super) fn push_unique(v: &mut Vec<String>, s: String) {
    if !s.is_empty() && !v.contains(&s) {
        v.push(s);
    }
}
