//! The arch plan of a build (and of each `Build::file_arch` source),
//! remembered in the manifest and the kernel cache when it depends only on
//! settings (not on detected GPUs), so a no-op run or a clean build starts
//! no nvcc to plan.

use crate::compile::incremental::cache::Cache;
use crate::compile::incremental::hash::KeyHasher;
use crate::compile::incremental::manifest::{Manifest, PlanStamp};
use crate::compile::run::context::Run;
use crate::compile::settings::presets;
use crate::compile::settings::toolchain;
use cuda_toolchain::arch::Arch;
use cuda_toolchain::plan::{ArchInputs, ArchPlan, ArchSource};
use cuda_toolchain::toolkit::Toolkit;
use cuda_toolchain::Error;

impl Run<'_> {
    /// The arch plan, remembered in the manifest when it depends only on
    /// settings (not on detected GPUs), so a no-op run starts no nvcc.
    pub(crate) fn arch_plan(
        &self,
        tk: &Toolkit,
        inputs: &ArchInputs,
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<ArchPlan, Error> {
        let plan = self.planned_archs(tk, inputs, manifest, cache)?;
        Ok(presets::shape_plan(self.spec.preset, plan))
    }

    /// The plan from the inputs, remembered (before a preset shapes it).
    fn planned_archs(
        &self,
        tk: &Toolkit,
        inputs: &ArchInputs,
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<ArchPlan, Error> {
        let mut k = KeyHasher::new("plan");
        k.str(&tk.nvcc.to_string_lossy());
        if let Ok(m) = std::fs::metadata(&tk.nvcc) {
            k.str(&m.len().to_string());
            k.str(&format!("{:?}", m.modified().ok()));
        }
        k.str(&format!("{:?}", tk.version));
        k.str(&format!("{inputs:?}"));
        for v in cuda_toolchain::plan::INPUT_VARS {
            k.str(self.env.get(v).unwrap_or("\u{0}unset"));
        }
        let key = k.finish();
        if let Some(p) = manifest.plans.get(&key).and_then(plan_from_stamp) {
            return Ok(p);
        }
        if let Some(stamp) = cache.and_then(|c| c.get_json::<PlanStamp>("plans", &key)) {
            if let Some(p) = plan_from_stamp(&stamp) {
                manifest.plans.insert(key, stamp);
                return Ok(p);
            }
        }
        let plan = toolchain::arch_plan(&self.env, tk, inputs)?;
        if !matches!(plan.source, ArchSource::Detected | ArchSource::Fallback) {
            let stamp = stamp_plan(&plan);
            if let Some(c) = cache {
                let _ = c.put_json("plans", &key, &stamp);
            }
            manifest.plans.insert(key, stamp);
        }
        Ok(plan)
    }
}

fn stamp_plan(p: &ArchPlan) -> PlanStamp {
    PlanStamp {
        sass: p.sass.iter().map(|a| a.to_string()).collect(),
        ptx: p.ptx.map(|a| a.to_string()),
        source: p.source.as_str().to_string(),
        warnings: p.warnings.clone(),
    }
}

fn plan_from_stamp(s: &PlanStamp) -> Option<ArchPlan> {
    let source = ArchSource::from_name(&s.source)
        .filter(|x| !matches!(x, ArchSource::Detected | ArchSource::Fallback))?;
    Some(ArchPlan {
        sass: s
            .sass
            .iter()
            .map(|a| Arch::parse(a).ok())
            .collect::<Option<_>>()?,
        ptx: match &s.ptx {
            Some(a) => Some(Arch::parse(a).ok()?),
            None => None,
        },
        source,
        warnings: s.warnings.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_stamp_round_trip() {
        let p = ArchPlan {
            sass: vec![Arch::new(8, 0), Arch::parse("90a").unwrap()],
            ptx: Some(Arch::parse("90a").unwrap()),
            source: ArchSource::CudaArchs,
            warnings: vec!["w".into()],
        };
        assert_eq!(plan_from_stamp(&stamp_plan(&p)), Some(p));
    }
}
