//! Typed launchers (feature `launchers`), a step of the finish stage:
//! generated from the sources by [`crate::launchers`] and spliced into each
//! source's module, remembered in the manifest and the kernel cache.

use crate::compile::incremental::cache::Cache;
#[cfg(feature = "launchers")]
use crate::compile::incremental::hash::KeyHasher;
#[cfg(feature = "launchers")]
use crate::compile::incremental::manifest::LaunchersStamp;
use crate::compile::incremental::manifest::Manifest;
use crate::compile::output::generated_module::ModuleItem;
use crate::compile::run::context::Run;
#[cfg(feature = "launchers")]
use crate::compile::settings::package;
use cuda_toolchain::Error;
use std::path::PathBuf;

impl Run<'_> {
    /// Typed launchers (feature `launchers`): generated from the sources by
    /// [`crate::launchers::generate`] and spliced into each source's module.
    /// Remembered in the manifest, so a no-op run does not parse again, and
    /// in the cache (shared through its Redis tier), so a clean build or
    /// another machine does not load libclang for sources already seen.
    #[cfg(feature = "launchers")]
    pub(crate) fn splice_launchers(
        &self,
        sources: &[PathBuf],
        includes: &[PathBuf],
        items: &mut [ModuleItem],
        manifest: &mut Manifest,
        cache: Option<&Cache>,
    ) -> Result<(), Error> {
        if !self.spec.launchers {
            manifest.launchers = None;
            if package::launchers_feature_unused(&self.base) {
                self.warn(
                    "cuda-build: the `launchers` feature is on in Cargo.toml, but no typed \
                     launchers are generated without `Build::launchers(true)` in the build script"
                        .into(),
                );
            }
            return Ok(());
        }
        // The version: a new cuda-build may generate different code from the
        // same sources. Paths as shown (package-relative), like the code and
        // notes themselves, so checkouts at other paths share the record.
        let mut k = KeyHasher::new(concat!("cuda-build launchers ", env!("CARGO_PKG_VERSION")));
        for s in sources {
            k.str(&self.display_path(s));
            k.str(
                manifest
                    .sources
                    .get(s)
                    .map(|e| e.key.as_str())
                    .unwrap_or(""),
            );
        }
        for i in includes {
            k.str(&self.display_path(i));
        }
        for (n, v) in &self.spec.defines {
            k.str(n);
            k.str(v.as_deref().unwrap_or("\u{0}none"));
        }
        let key = k.finish();
        // A record with another key or length is not this build's (a
        // foreign file): parse again.
        let fits = |l: &LaunchersStamp| l.key == key && l.code.len() == sources.len();
        let stamp = match manifest.launchers.take().filter(fits) {
            Some(l) => l,
            None => match cache.and_then(|c| c.get_json::<LaunchersStamp>("launchers", &key)) {
                Some(l) if fits(&l) => l,
                _ => {
                    let g = crate::launchers::generate_in(
                        &self.env,
                        Some(&self.base),
                        sources,
                        includes,
                        &self.spec.defines,
                    )?;
                    let l = LaunchersStamp {
                        key,
                        code: g.code_per_source.into_iter().map(|(_, c)| c).collect(),
                        notes: g.notes,
                    };
                    if let Some(c) = cache {
                        // Best effort: a record not written is parsed again next time.
                        let _ = c.put_json("launchers", &l.key, &l);
                    }
                    l
                }
            },
        };
        for n in &stamp.notes {
            self.warn(n.clone());
        }
        for (item, code) in items.iter_mut().zip(&stamp.code) {
            if !code.trim().is_empty() {
                item.extra = Some(code.clone());
            }
        }
        manifest.launchers = Some(stamp);
        Ok(())
    }

    #[cfg(not(feature = "launchers"))]
    pub(crate) fn splice_launchers(
        &self,
        _sources: &[PathBuf],
        _includes: &[PathBuf],
        _items: &mut [ModuleItem],
        _manifest: &mut Manifest,
        _cache: Option<&Cache>,
    ) -> Result<(), Error> {
        if self.spec.launchers {
            return Err(Error::new(
                "launchers-feature-off",
                "Build::launchers(true) needs cuda-build's `launchers` feature, which is off",
            )
            .with_help(
                "depend on cuda-build with `features = [\"launchers\"]` in [build-dependencies]",
            ));
        }
        Ok(())
    }
}
