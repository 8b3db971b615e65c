//! `cargo cuda prebuild`: the package's kernels built for its declared arch
//! set, target triples and cargo profiles, and shipped in the package as
//! `cuda-prebuilt/` (docs/prebuilt.md), so a build without nvcc can use them.
//!
//! The images come from the package's own build script, run by cargo the
//! way any build runs it (`cargo check`, in a target directory of its own),
//! with `CUDA_BUILD_PREBUILT_RECORD` naming a staging folder that each
//! cuda-build `Build` of the package records its outputs into: the same
//! engine and code path as every other build. Per profile and target, one
//! run is for the whole arch set (`CUDA_ARCHS=80;86;89;90`), then one per
//! arch, highest first: what the earlier runs staged serves those runs by
//! the same rules a downstream build uses, so they compile only what is new
//! (a PTX output for each arch), never a multi-arch object again.
//!
//! `--verify` rebuilds every shipped image from the package's sources, with
//! the toolkit the manifest records and no kernel cache, the same way, and
//! compares the bytes (objects up to nvcc's temporary file name, which
//! embeds its process id); each difference is reported by file.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::Context;
use crate::prebuilt::{self, Package};
use crate::style::Tone;
use crate::workspace;
use cuda_build::compile::prebuilt::manifest::{self, Header, Record};
use cuda_build::compile::prebuilt::{staging, stored};
use cuda_toolchain::arch::{parse_arch_list, ArchRequest};
use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::Error;

/// `cargo cuda prebuild`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Declare what to ship in Cargo.toml:\n  [package.metadata.cuda]\n  prebuilt = { arch = \"80;86;89;90\", targets = [\"x86_64-unknown-linux-gnu\"], profiles = [\"dev\", \"release\"] }\n\
                  Exit status: 0 done (with --verify: every image matches), 1 an error, or --verify found differences."
)]
pub struct Args {
    /// The arch set to ship (e.g. `80;86;89;90`); default: `prebuilt.arch` under [package.metadata.cuda].
    #[arg(long, value_name = "ARCHS")]
    pub arch: Option<String>,
    /// A target triple to build for (repeatable); default: `prebuilt.targets`, else the build machine's.
    #[arg(long = "target", value_name = "TRIPLE")]
    pub targets: Vec<String>,
    /// A cargo profile to build in (repeatable); default: `prebuilt.profiles`, else dev and release.
    #[arg(long = "profile", value_name = "NAME")]
    pub profiles: Vec<String>,
    /// Cargo features to build with (as cargo's --features).
    #[arg(long, value_name = "FEATURES")]
    pub features: Option<String>,
    /// Build without the package's default features.
    #[arg(long)]
    pub no_default_features: bool,
    /// Rebuild every shipped image from the sources with the recorded toolkit and compare the bytes.
    #[arg(long)]
    pub verify: bool,
    /// The package's Cargo.toml (default: the current directory's).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// What to build: the arch set, the single archs after it, targets, profiles.
struct Runs {
    arch: String,
    singles: Vec<String>,
    /// None: the build machine's (cargo without `--target`).
    targets: Vec<Option<String>>,
    profiles: Vec<String>,
    cargo_args: Vec<String>,
}

/// `cargo cuda prebuild`: the exit code.
pub fn exec(ctx: &Context, args: &Args) -> i32 {
    let err = ctx.err();
    let result = if args.verify {
        verify(ctx, args)
    } else {
        produce(ctx, args).map(|()| 0)
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("{}", err.cuda_error(&e));
            1
        }
    }
}

fn produce(ctx: &Context, args: &Args) -> Result<(), Error> {
    let env = &ctx.session().env;
    let cargo = workspace::find_cargo(env)?;
    let package = prebuilt::locate(env, &cargo, args.manifest_path.as_deref())?;
    let md = cuda_toolchain::metadata::read(&package.dir)?;
    let decl = md.prebuilt.unwrap_or_default();
    let arch = args.arch.clone().or(decl.arch).ok_or_else(|| {
        Error::new(
            "prebuilt-not-declared",
            format!(
                "`{}` declares no arch set to prebuild for",
                package.manifest_path.display()
            ),
        )
        .with_help("add `prebuilt = { arch = \"80;86;89;90\" }` under [package.metadata.cuda], or pass --arch \"80;86;89;90\"")
    })?;
    let targets = pick(&args.targets, &decl.targets);
    let profiles = pick(&args.profiles, &decl.profiles);
    let runs = runs(&arch, targets, profiles, cargo_args(args))?;
    let work = package.target_dir.join("cuda-prebuild");
    let staging_dir = work.join("staging");
    let _ = std::fs::remove_dir_all(&staging_dir);
    build_all(
        ctx,
        &cargo,
        &package,
        &runs,
        &staging_dir,
        &work.join("target"),
        &[],
    )?;
    let records = staging::read(&staging_dir)?;
    if records.is_empty() {
        return Err(Error::new(
            "prebuilt-not-declared",
            format!("the build of `{}` recorded no kernel image", package.name),
        )
        .with_help("the package's build script must build its kernels with cuda-build (a `Build`, or `compile_all`)"));
    }
    let header = Header {
        schema: manifest::SCHEMA.into(),
        version: manifest::VERSION,
        package: package.name.clone(),
        arch: runs.arch.clone(),
        targets: runs.targets.iter().flatten().cloned().collect(),
        profiles: runs.profiles.clone(),
        cargo_args: runs.cargo_args.clone(),
    };
    let summary = write_package(&package, &header, records, &staging_dir)?;
    let _ = std::fs::remove_dir_all(&staging_dir);
    let out = ctx.out();
    outln!(
        "{}",
        out.status(
            Tone::Good,
            "Prebuilt",
            &format!(
                "{}: {} output(s) in {} image(s), {} compressed ({} raw), in {}",
                package.name,
                summary.records,
                summary.images,
                mib(summary.compressed),
                mib(summary.raw),
                package.dir.join(manifest::DIR).display()
            )
        )
    );
    outln!("crates.io accepts a .crate of at most 10 MiB; `cargo package` shows this one's size");
    for w in packaging_check(env, &cargo, &package) {
        errln!("{}", ctx.err().warning(&w));
    }
    Ok(())
}

/// The flag's values, else the declaration's.
fn pick(flag: &[String], declared: &[String]) -> Vec<String> {
    if flag.is_empty() {
        declared.to_vec()
    } else {
        flag.to_vec()
    }
}

fn cargo_args(args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = &args.features {
        out.extend(["--features".to_string(), f.clone()]);
    }
    if args.no_default_features {
        out.push("--no-default-features".into());
    }
    out
}

/// The runs for an arch set: the set, then each arch of it alone, highest
/// first (an arch set of `all` gets no single runs: what it holds depends
/// on the nvcc).
fn runs(
    arch: &str,
    targets: Vec<String>,
    profiles: Vec<String>,
    cargo_args: Vec<String>,
) -> Result<Runs, Error> {
    let spec = parse_arch_list(arch)?;
    let mut singles: Vec<(cuda_toolchain::arch::Arch, String)> = Vec::new();
    for req in &spec.0 {
        match req {
            ArchRequest::Native => {
                return Err(Error::new(
                    "invalid-argument",
                    format!("the prebuilt arch set `{arch}` says `native`, which depends on the machine that builds it"),
                )
                .with_help("list the archs to ship, e.g. \"80;86;89;90\""))
            }
            ArchRequest::Target(t) => singles.push((t.arch, req.to_string())),
            ArchRequest::All | ArchRequest::AllMajor => {}
        }
    }
    singles.sort_by_key(|s| std::cmp::Reverse(s.0));
    singles.dedup_by(|a, b| a.1 == b.1);
    let singles: Vec<String> =
        if singles.len() > 1 && spec.0.iter().all(|r| matches!(r, ArchRequest::Target(_))) {
            singles.into_iter().map(|(_, s)| s).collect()
        } else {
            Vec::new()
        };
    Ok(Runs {
        arch: arch.to_string(),
        singles,
        targets: if targets.is_empty() {
            vec![None]
        } else {
            targets.into_iter().map(Some).collect()
        },
        profiles: if profiles.is_empty() {
            vec!["dev".into(), "release".into()]
        } else {
            profiles
        },
        cargo_args,
    })
}

/// Every run of the package's build, recording into `staging_dir`.
fn build_all(
    ctx: &Context,
    cargo: &Path,
    package: &Package,
    runs: &Runs,
    staging_dir: &Path,
    target_dir: &Path,
    extra_env: &[(&str, OsString)],
) -> Result<(), Error> {
    staging::create(staging_dir, &package.dir).map_err(|e| {
        Error::new(
            "write-failed",
            format!("cannot create `{}`: {e}", staging_dir.display()),
        )
    })?;
    let env = &ctx.session().env;
    let err = ctx.err();
    for profile in &runs.profiles {
        for target in &runs.targets {
            for archs in std::iter::once(&runs.arch).chain(&runs.singles) {
                clean(env, cargo, package, target_dir)?;
                let mut args: Vec<String> = vec![
                    "check".into(),
                    "--manifest-path".into(),
                    package.manifest_path.display().to_string(),
                    "-p".into(),
                    package.name.clone(),
                ];
                match profile.as_str() {
                    "dev" => {}
                    "release" => args.push("--release".into()),
                    other => args.extend(["--profile".into(), other.to_string()]),
                }
                if let Some(t) = target {
                    args.extend(["--target".into(), t.clone()]);
                }
                args.extend(runs.cargo_args.iter().cloned());
                errln!(
                    "{}",
                    err.status(
                        Tone::Good,
                        "Prebuilding",
                        &format!(
                            "{} ({profile}, {}, CUDA_ARCHS={archs})",
                            package.name,
                            target.as_deref().unwrap_or("this machine's target")
                        )
                    )
                );
                let mut cmd = Command::new(cargo);
                cmd.args(&args)
                    .current_dir(&package.dir)
                    .env("CUDA_ARCHS", archs)
                    .env(Var::CudaBuildPrebuiltRecord.name(), staging_dir)
                    .env("CARGO_TARGET_DIR", target_dir)
                    // The prebuild decides what is used; a handed plan is for another build.
                    .env_remove(Var::CudaBuildPrebuilt.name())
                    .env_remove(Var::CargoCudaPlan.name());
                for (k, v) in extra_env {
                    cmd.env(k, v);
                }
                let timeout = Duration::from_secs(6 * 3600);
                let out = cuda_toolchain::process::run_command(&mut cmd, timeout).map_err(|e| {
                    Error::new("prebuild-failed", format!("cargo could not run: {e}"))
                })?;
                if !out.status.success() {
                    let tail: Vec<&str> = out.stderr.lines().collect();
                    let tail = tail[tail.len().saturating_sub(80)..].join("\n");
                    return Err(Error::new(
                        "prebuild-failed",
                        format!(
                            "the build of `{}` failed ({profile}, CUDA_ARCHS={archs}{})",
                            package.name,
                            target
                                .as_ref()
                                .map(|t| format!(", --target {t}"))
                                .unwrap_or_default()
                        ),
                    )
                    .with_detail(tail)
                    .with_help(format!(
                        "the same build by hand: CUDA_ARCHS=\"{archs}\" cargo {}",
                        args.join(" ")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `cargo clean -p <package>` in the prebuild's target directory: its
/// build script then runs again, and records.
fn clean(env: &Env, cargo: &Path, package: &Package, target_dir: &Path) -> Result<(), Error> {
    let mut cmd = Command::new(cargo);
    cmd.args(["clean", "-q", "--manifest-path"])
        .arg(&package.manifest_path)
        .args(["-p", &package.name])
        .env("CARGO_TARGET_DIR", target_dir);
    let timeout = cuda_toolchain::process::timeout_from_env(env, Duration::from_secs(300));
    match cuda_toolchain::process::run_command(&mut cmd, timeout) {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(Error::new(
            "prebuild-failed",
            "`cargo clean -p` failed before a prebuild run",
        )
        .with_detail(o.stderr)),
        Err(e) => Err(Error::new(
            "prebuild-failed",
            format!("cargo could not run: {e}"),
        )),
    }
}

/// What was written into the package.
struct Summary {
    records: usize,
    images: usize,
    raw: u64,
    compressed: u64,
}

/// Writes `cuda-prebuilt/` into the package: every distinct image
/// compressed once (named by its SHA-256), the manifest with one line per
/// distinct output. Written beside it, then swapped in.
fn write_package(
    package: &Package,
    header: &Header,
    mut records: Vec<Record>,
    staging_dir: &Path,
) -> Result<Summary, Error> {
    let fail = |p: &Path, e: std::io::Error| {
        Error::new(
            "write-failed",
            format!("cannot write `{}`: {e}", p.display()),
        )
        .with_help("check the free space and the permissions of the package folder")
    };
    let dest = package.dir.join(manifest::DIR);
    let tmp = package
        .dir
        .join(format!(".{}.tmp-{}", manifest::DIR, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("images")).map_err(|e| fail(&tmp, e))?;
    let mut summary = Summary {
        records: 0,
        images: 0,
        raw: 0,
        compressed: 0,
    };
    // Each distinct image once, compressed on every core: zstd's level 19
    // is the slowest step of a prebuild whose kernels come from the cache.
    let mut distinct: BTreeMap<String, PathBuf> = BTreeMap::new();
    for r in &records {
        distinct
            .entry(r.sha256.clone())
            .or_insert_with(|| staging_dir.join(&r.file));
    }
    let jobs: Vec<(&String, &PathBuf)> = distinct.iter().collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let sizes: Vec<Result<(u64, u64), Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(jobs.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    while let Some((sha, from)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let to = tmp.join(format!("images/{sha}.zst"));
                        done.push(compress_image(from, &to, fail));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join().unwrap_or_else(|_| {
                    vec![Err(Error::new(
                        "write-failed",
                        "a thread compressing kernel images stopped unexpectedly",
                    ))]
                })
            })
            .collect()
    });
    for size in sizes {
        let (raw, compressed) = size?;
        summary.images += 1;
        summary.raw += raw;
        summary.compressed += compressed;
    }
    for r in &mut records {
        r.file = format!("images/{}.zst", r.sha256);
    }
    records.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    records.dedup();
    summary.records = records.len();
    let text = manifest::render(header, &records);
    let m = tmp.join(manifest::MANIFEST);
    std::fs::write(&m, text).map_err(|e| fail(&m, e))?;
    let old = package
        .dir
        .join(format!(".{}.old-{}", manifest::DIR, std::process::id()));
    if dest.exists() {
        std::fs::rename(&dest, &old).map_err(|e| fail(&dest, e))?;
    }
    std::fs::rename(&tmp, &dest).map_err(|e| fail(&dest, e))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(summary)
}

/// Compresses one staged image into the package's folder: its raw and
/// compressed sizes.
fn compress_image(
    from: &Path,
    to: &Path,
    fail: impl Fn(&Path, std::io::Error) -> Error,
) -> Result<(u64, u64), Error> {
    let bytes = std::fs::read(from).map_err(|e| fail(from, e))?;
    let z = prebuilt::compress(&bytes).map_err(|e| fail(from, e))?;
    std::fs::write(to, &z).map_err(|e| fail(to, e))?;
    Ok((bytes.len() as u64, z.len() as u64))
}

/// Warnings when `cargo package` would leave out the manifest, an image or
/// a file the images were built from (an `include` list, `exclude`, .gitignore).
fn packaging_check(env: &Env, cargo: &Path, package: &Package) -> Vec<String> {
    let mut cmd = Command::new(cargo);
    cmd.args(["package", "--list", "--allow-dirty", "--manifest-path"])
        .arg(&package.manifest_path)
        .current_dir(&package.dir);
    let timeout = cuda_toolchain::process::timeout_from_env(env, Duration::from_secs(300));
    let listed: BTreeSet<String> = match cuda_toolchain::process::run_command(&mut cmd, timeout) {
        Ok(o) if o.status.success() => o.stdout.lines().map(|l| l.trim().replace('\\', "/")).collect(),
        _ => {
            return vec![format!(
                "could not run `cargo package --list` to check that {}/ and the sources it was built from are packaged; check it by hand",
                manifest::DIR
            )]
        }
    };
    let Ok((_, records)) = manifest::read(&manifest::path_in(&package.dir)) else {
        return Vec::new();
    };
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    wanted.insert(format!("{}/{}", manifest::DIR, manifest::MANIFEST));
    for r in &records {
        wanted.insert(format!("{}/{}", manifest::DIR, r.file));
        wanted.extend(r.inputs.iter().map(|(p, _)| p.clone()));
    }
    let missing: Vec<&String> = wanted.difference(&listed).collect();
    if missing.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "`cargo package` would leave out {} file(s) a downstream build needs to use the shipped images: {}{}; add them to `include` in Cargo.toml (or take them out of `exclude` and .gitignore)",
        missing.len(),
        missing.iter().take(8).map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
        if missing.len() > 8 { ", …" } else { "" }
    )]
}

fn mib(n: u64) -> String {
    format!("{:.2} MiB", n as f64 / (1u64 << 20) as f64)
}

/// `--verify`: every shipped image checked against its manifest, rebuilt
/// from the sources with the recorded toolkit, and compared.
fn verify(ctx: &Context, args: &Args) -> Result<i32, Error> {
    let env = &ctx.session().env;
    let cargo = workspace::find_cargo(env)?;
    let package = prebuilt::locate(env, &cargo, args.manifest_path.as_deref())?;
    let path = manifest::path_in(&package.dir);
    let Some(shipped) = prebuilt::read_shipped(&path) else {
        return Err(Error::new(
            "prebuilt-manifest-invalid",
            format!(
                "`{}` ships no prebuilt images: `{}` does not exist",
                package.name,
                path.display()
            ),
        )
        .with_help("run `cargo cuda prebuild` first"));
    };
    let shipped = shipped?;
    let header = &shipped.header;
    let (nvcc_env, toolkit_note) = recorded_toolkit(env, &shipped.images)?;
    let runs = runs(
        &header.arch,
        header.targets.clone(),
        header.profiles.clone(),
        header.cargo_args.clone(),
    )?;
    let work = package.target_dir.join("cuda-prebuild");
    let staging_dir = work.join("verify-staging");
    let target_dir = work.join("verify-target");
    let _ = std::fs::remove_dir_all(&staging_dir);
    let _ = std::fs::remove_dir_all(&target_dir);
    errln!(
        "{}",
        ctx.err().status(
            Tone::Good,
            "Verifying",
            &format!(
                "{} against {} ({toolkit_note})",
                package.name,
                path.display()
            )
        )
    );
    let mut extra = nvcc_env;
    extra.push(("CUDA_BUILD_NO_CACHE", OsString::from("1")));
    build_all(
        ctx,
        &cargo,
        &package,
        &runs,
        &staging_dir,
        &target_dir,
        &extra,
    )?;
    let rebuilt = staging::read(&staging_dir)?;
    let mut problems: Vec<String> = Vec::new();
    let mut same = 0usize;
    let mut host_notes: BTreeSet<String> = BTreeSet::new();
    for (r, bytes) in &shipped.images {
        let what = format!("{} → {}", r.file, prebuilt::describe(r));
        let bytes = match bytes {
            Ok(b) => b,
            Err(why) => {
                problems.push(format!("{what}: {why}"));
                continue;
            }
        };
        let twin = rebuilt.iter().find(|x| {
            (
                &x.module, &x.source, &x.role, &x.target, &x.flags, &x.defines, &x.targets,
            ) == (
                &r.module, &r.source, &r.role, &r.target, &r.flags, &r.defines, &r.targets,
            )
        });
        let Some(twin) = twin else {
            problems.push(format!("{what}: the rebuild made no such output (its flags, defines or archs were not reproduced)"));
            continue;
        };
        if twin.inputs != r.inputs {
            let changed: Vec<&str> = r
                .inputs
                .iter()
                .filter(|i| !twin.inputs.contains(i))
                .map(|(p, _)| p.as_str())
                .collect();
            problems.push(format!(
                "{what}: built from other sources than the package's: {}",
                changed.join(", ")
            ));
            continue;
        }
        let new = std::fs::read(staging_dir.join(&twin.file)).unwrap_or_default();
        if stored::comparable(&r.kind, &new) != stored::comparable(&r.kind, bytes) {
            if twin.host_compiler != r.host_compiler {
                host_notes.insert(format!(
                    "the rebuild's host compiler is {}, the recorded one {}",
                    twin.host_compiler.as_deref().unwrap_or("unknown"),
                    r.host_compiler.as_deref().unwrap_or("unknown")
                ));
            }
            problems.push(format!(
                "{what}: the rebuilt bytes differ (shipped sha256 {}, rebuilt {})",
                r.sha256, twin.sha256
            ));
            continue;
        }
        same += 1;
    }
    let _ = std::fs::remove_dir_all(&staging_dir);
    let out = ctx.out();
    if problems.is_empty() {
        outln!(
            "{}",
            out.status(
                Tone::Good,
                "Verified",
                &format!("{}: all {same} shipped image(s) are what their sources compile to ({toolkit_note})", package.name)
            )
        );
        return Ok(0);
    }
    for p in &problems {
        outln!("{} {p}", out.paint(Tone::Bad, "differs:"));
    }
    let mut e = Error::new(
        "prebuilt-verify-failed",
        format!(
            "{} of {} shipped image(s) of `{}` are not what their sources compile to",
            problems.len(),
            shipped.images.len(),
            package.name
        ),
    );
    for n in host_notes {
        e = e.with_detail(n);
    }
    errln!(
        "{}",
        ctx.err().cuda_error(&e.with_help(
            "run `cargo cuda prebuild` again from these sources, with the recorded toolkit"
        ))
    );
    Ok(1)
}

/// Variables set for a child process.
type ChildEnv = Vec<(&'static str, OsString)>;

/// The environment that selects the toolkit the manifest records (`NVCC`
/// set to its nvcc), found among the toolkits discovery sees; and a note
/// naming it.
fn recorded_toolkit(
    env: &Env,
    images: &[(Record, Result<Vec<u8>, String>)],
) -> Result<(ChildEnv, String), Error> {
    let versions: BTreeSet<&str> = images.iter().map(|(r, _)| r.nvcc.as_str()).collect();
    let Some(&wanted) = versions.iter().next_back() else {
        return Ok((Vec::new(), "nothing recorded".into()));
    };
    let found = cuda_toolchain::toolkit::discover_all(env, &Default::default())?;
    let tk = found
        .candidates
        .iter()
        .find(|t| t.version.as_ref().is_some_and(|v| v.to_string() == wanted))
        .ok_or_else(|| {
            Error::new(
                "toolkit-requirement",
                format!("verifying needs nvcc {wanted}, the version the manifest records, and no such toolkit was found"),
            )
            .with_help(format!("install it: `cargo cuda toolkit install {wanted}`, or set CUDA_HOME to it"))
        })?;
    let note = match versions.len() {
        1 => format!("nvcc {wanted} at {}", tk.root.display()),
        _ => format!(
            "nvcc {wanted} at {}; the manifest also records {}",
            tk.root.display(),
            versions
                .iter()
                .filter(|v| **v != wanted)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok((
        vec![(Var::Nvcc.name(), tk.nvcc.clone().into_os_string())],
        note,
    ))
}
