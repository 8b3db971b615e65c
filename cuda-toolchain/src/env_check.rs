//! [`Env::check`]: every set variable whose value does not have the shape
//! its kind asks for, one warning each. Apart from `env.rs` because arch
//! lists are checked by the plan's parser, which itself reads the `Env`.

use crate::env::{parse_bytes, parse_flag, parse_seconds, show_value, Env, Kind, Var};
use std::path::Path;

impl Env {
    /// Every set variable whose value does not have the shape its [`Kind`]
    /// asks for, as one warning each that names the variable, shows the value
    /// (shortened), says what was expected and what happens instead.
    ///
    /// Another tool's arch list (`CMAKE_CUDA_ARCHITECTURES`,
    /// `TORCH_CUDA_ARCH_LIST`) that does not parse is reported here, since
    /// the plan skips it. This project's arch variables are checked here only
    /// when a higher-precedence one shadows them (the one in use fails the
    /// plan with its own error).
    ///
    /// ```
    /// use cuda_toolchain::env::{Env, Var};
    /// let env = Env::empty().set(Var::CudaBuildTimeout, "ten");
    /// let w = env.check();
    /// assert!(w[0].starts_with("CUDA_BUILD_TIMEOUT=`ten` is not a duration"), "{w:?}");
    /// assert!(Env::empty().set(Var::CudaBuildTimeout, "10s").check().is_empty());
    /// ```
    pub fn check(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut arch_in_use: Option<Option<Var>> = None;
        for var in self.iter().map(|(v, _)| v).collect::<Vec<_>>() {
            if let Some(w) = self.check_one(var, &mut arch_in_use) {
                out.push(w);
            }
        }
        out
    }

    fn check_one(&self, var: Var, arch_in_use: &mut Option<Option<Var>>) -> Option<String> {
        let kind = var.kind();
        let raw = self.get_os(var)?;
        let name = var.name();
        let Some(value) = raw.to_str() else {
            if used_as_given(var) {
                return None;
            }
            return Some(format!(
                "{name} is not valid UTF-8, so it is ignored; set it to {}",
                expected(var)
            ));
        };
        if kind == Kind::free {
            return check_text(var, value);
        }
        let shown = show_value(value);
        if value.trim().is_empty() {
            return Some(format!(
                "{name} is set but empty, so it is ignored; unset it, or set it to {}",
                kind.expected()
            ));
        }
        match kind {
            Kind::flag => parse_flag(value).is_none().then(|| {
                format!(
                    "{name}={shown} is not a switch, so it counts as off; expected {}",
                    kind.expected()
                )
            }),
            Kind::seconds => parse_seconds(value).is_none().then(|| {
                format!(
                    "{name}={shown} is not a duration, so the default applies; expected {}",
                    kind.expected()
                )
            }),
            Kind::count => (value.trim().parse::<usize>().ok().filter(|&n| n > 0))
                .is_none()
                .then(|| {
                    format!(
                        "{name}={shown} is not a positive whole number, so it is ignored; expected {}",
                        kind.expected()
                    )
                }),
            Kind::archs | Kind::torch_archs => {
                let parsed = crate::plan::parse_arch_var(var, value);
                if crate::plan::is_foreign(var) {
                    // Another tool's convention: a bad value is skipped, never fatal.
                    return parsed.err().map(|e| {
                        let what = if e.message.starts_with(name) {
                            e.message
                        } else {
                            format!("{name}={shown} is not an arch list ({})", e.message)
                        };
                        format!(
                            "{what}; it is ignored, so the next arch setting applies; expected {}",
                            kind.expected()
                        )
                    });
                }
                // One of ours: the one in use fails the plan with its own error.
                match *arch_in_use.get_or_insert_with(|| {
                    crate::plan::arch_var_in_use(self).map(|(v, _)| v)
                }) {
                    Some(w) if w != var => parsed.err().map(|e| {
                        format!(
                            "{name}={shown} is not an arch list ({}); it is ignored because {} is set",
                            e.message,
                            w.name()
                        )
                    }),
                    _ => None,
                }
            }
            Kind::bytes => parse_bytes(value).is_none().then(|| {
                format!(
                    "{name}={shown} is not an amount of memory, so the default applies; expected {}",
                    kind.expected()
                )
            }),
            Kind::path | Kind::program => value
                .chars()
                .any(char::is_control)
                .then(|| format!("{name}={shown} holds control characters; expected {}", kind.expected())),
            Kind::free => None,
        }
    }
}

/// Variables whose value is only ever used as the bytes the OS gave (a
/// search path, a program to run, "set at all"): any bytes are fine, UTF-8
/// or not. Every other variable is read as text, so a value that is not
/// UTF-8 is ignored, and [`Env::check`] says so.
fn used_as_given(var: Var) -> bool {
    matches!(
        var,
        Var::Path
            | Var::LdLibraryPath
            | Var::XdgCacheHome
            | Var::NoColor
            | Var::DocsRs
            | Var::Cargo
            | Var::CargoCudaProgress
    )
}

/// What a valid value of `var` looks like, in words: its [`Kind`]'s, or for
/// free text with a shape of its own (a URL, a switch, a level), that shape.
fn expected(var: Var) -> &'static str {
    match var {
        Var::CudaBuildCacheRedis => "a URL such as `redis://host:6379/0`",
        Var::SccacheRedisEndpoint => "a Redis URL such as `redis://host:6379`",
        Var::UvIndexUrl | Var::PipIndexUrl => "an index URL such as `https://pypi.org/simple`",
        Var::HttpsProxy | Var::HttpsProxyLower | Var::HttpProxy | Var::HttpProxyLower => {
            "a proxy such as `http://proxy.example:3128`"
        }
        Var::CudaVisibleDevices => "device indices or GPU UUIDs such as `0,1` or `GPU-8f3a`",
        Var::CargoNetOffline => "`true` or `false`",
        Var::CargoTermColor => "`always`, `never` or `auto`",
        Var::CudarcCudaVersion => "a CUDA version as a number, such as `13000`",
        Var::CargoCudaPlan => "the JSON plan `cargo cuda` hands build scripts (set by `cargo cuda`)",
        Var::Target | Var::Host => "a target triple such as `x86_64-unknown-linux-gnu`",
        Var::Debug => "cargo's debug setting: `true`, `false`, `0`, `1`, `2`, `none`, `limited`, `full`, `line-tables-only`",
        Var::OptLevel => "cargo's opt-level: `0`, `1`, `2`, `3`, `s` or `z`",
        Var::CudaBuildPrebuilt => "`prefer` (the default), `never` or `require`",
        Var::Path | Var::LdLibraryPath => "directories separated by `:`",
        Var::Home | Var::OutDir | Var::CargoManifestDir | Var::CargoCudaProgress => {
            Kind::path.expected()
        }
        Var::XdgCacheHome => "an absolute path",
        Var::CudaToolkitTargetDir => "a toolkit `targets/` directory name such as `sbsa-linux`",
        Var::Cargo | Var::CargoCudaProbe | Var::RustcWrapper => Kind::program.expected(),
        _ => var.kind().expected(),
    }
}

/// The check of a variable whose [`Kind`] is `free`: most free text has a
/// shape after all. `None` when the value fits it (or anything goes).
/// `CUDA_BUILD_CACHE_REDIS` is parsed where it is used: the kernel cache
/// says what is wrong with it, once.
fn check_text(var: Var, value: &str) -> Option<String> {
    let name = var.name();
    let shown = show_value(value);
    let v = value.trim();
    let bad = |what: &str| Some(format!("{name}={shown} {what}; expected {}", expected(var)));
    let has_control = value.chars().any(char::is_control);
    match var {
        Var::Path | Var::LdLibraryPath | Var::Home | Var::OutDir | Var::CargoManifestDir
        | Var::CargoCudaProgress | Var::Cargo | Var::CargoCudaProbe | Var::RustcWrapper
        | Var::CudaToolkitTargetDir
            if has_control =>
        {
            bad("holds control characters")
        }
        Var::XdgCacheHome if has_control || !Path::new(value).is_absolute() => {
            bad("is not an absolute path, so it is ignored (the XDG base directory rule)")
        }
        Var::SccacheRedisEndpoint
            if !["redis://", "rediss://", "redis+unix://", "unix://", "tcp://"]
                .iter()
                .any(|s| v.starts_with(s)) =>
        {
            bad("is not a Redis URL, so sccache cannot use it")
        }
        Var::UvIndexUrl | Var::PipIndexUrl
            if has_control || !["https://", "http://", "file://"].iter().any(|s| v.starts_with(s)) =>
        {
            bad("is not an index URL, so `cargo cuda toolkit install` cannot use it")
        }
        Var::HttpsProxy | Var::HttpsProxyLower | Var::HttpProxy | Var::HttpProxyLower
            if !v.is_empty() && !is_proxy(v) =>
        {
            bad("is not a proxy URL, so downloads fail")
        }
        Var::CudaVisibleDevices => crate::probe::visible::parse(value)
            .problem
            .and_then(|why| bad(&format!("stops early: {why}; the driver shows only the devices before it"))),
        Var::CargoNetOffline if !v.is_empty() && parse_flag(v).is_none() => {
            bad("is not a switch, so it counts as off")
        }
        Var::CargoTermColor if !v.is_empty() && !matches!(v, "always" | "never" | "auto") => {
            bad("is not a colour choice, so colour follows the terminal")
        }
        Var::CudarcCudaVersion if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) => {
            bad("is not a version number")
        }
        Var::CargoCudaPlan
            if !v.is_empty()
                && serde_json::from_str::<crate::plan::HandedPlan>(v).is_err() =>
        {
            Some(format!(
                "{name} does not hold a plan `cargo cuda` made, so build scripts plan on their own; unset it (`cargo cuda` sets it)"
            ))
        }
        Var::Target | Var::Host if !is_triple(v) => bad("is not a target triple"),
        Var::Debug
            if !v.is_empty()
                && !matches!(
                    v.to_ascii_lowercase().as_str(),
                    "true" | "false" | "0" | "1" | "2" | "none" | "limited" | "full"
                        | "line-tables-only" | "line-directives-only"
                ) =>
        {
            bad("is not a debug setting, so no line info is added")
        }
        Var::OptLevel if !v.is_empty() && !matches!(v, "0" | "1" | "2" | "3" | "s" | "z") => {
            bad("is not an opt-level")
        }
        Var::CudaBuildPrebuilt
            if !v.is_empty() && crate::metadata::prebuilt::Policy::parse(v).is_none() =>
        {
            bad("is not a prebuilt policy, so builds stop (error[prebuilt-policy-invalid])")
        }
        _ => None,
    }
}

/// `[scheme://][user:password@]host[:port]` with a proxy scheme.
fn is_proxy(v: &str) -> bool {
    let rest = match v.split_once("://") {
        Some((scheme, rest)) => {
            if !matches!(
                scheme.to_ascii_lowercase().as_str(),
                "http" | "https" | "socks4" | "socks4a" | "socks5" | "socks5h"
            ) {
                return false;
            }
            rest
        }
        None => v,
    };
    let hostport = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let hostport = hostport.trim_end_matches('/');
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, Some(p)),
        _ => (hostport, None),
    };
    !host.is_empty()
        && !host.contains(|c: char| c.is_whitespace() || c.is_control() || c == '/')
        && port.is_none_or(|p| p.parse::<u16>().is_ok())
}

/// `arch-vendor-os[-env]`: two to four `-`, letters, digits, `_` and `.`.
fn is_triple(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    (2..=5).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        })
}
