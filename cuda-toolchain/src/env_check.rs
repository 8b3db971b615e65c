//! [`Env::check`]: every set variable whose value does not have the shape
//! its kind asks for, one warning each. Apart from `env.rs` because arch
//! lists are checked by the plan's parser, which itself reads the `Env`.

use crate::env::{parse_flag, parse_seconds, show_value, Env, Kind, Var};

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
        if kind == Kind::free {
            return None;
        }
        let raw = self.get_os(var)?;
        let name = var.name();
        let Some(value) = raw.to_str() else {
            return Some(format!(
                "{name} is not valid UTF-8, so it is ignored; set it to {}",
                kind.expected()
            ));
        };
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
            Kind::path | Kind::program => value
                .chars()
                .any(char::is_control)
                .then(|| format!("{name}={shown} holds control characters; expected {}", kind.expected())),
            Kind::free => None,
        }
    }
}
