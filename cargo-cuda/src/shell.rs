//! Shell lines for `cargo cuda env --shell`, quoted by the library's one quoter.

/// Quotes `s` for bash and zsh ([`cuda_toolchain::process::shell_quote`]).
///
/// ```text
/// /usr/local/cuda      -> /usr/local/cuda
/// /opt/my cuda         -> '/opt/my cuda'
/// it's                 -> 'it'\''s'
/// ```
pub fn quote(s: &str) -> String {
    cuda_toolchain::process::shell_quote(s)
}

/// `export NAME=value`, with the value quoted.
pub fn export(name: &str, value: &str) -> String {
    format!("export {name}={}", quote(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(
            quote("/usr/local/cuda-13.0/bin"),
            "/usr/local/cuda-13.0/bin"
        );
        assert_eq!(quote("/opt/my cuda"), "'/opt/my cuda'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote("a\nb"), "'a\nb'");
    }

    #[test]
    fn round_trips_through_sh() {
        let nasty = "a b'c\"d$e`f\\g\nh*";
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote(nasty)))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), nasty);
    }
}
