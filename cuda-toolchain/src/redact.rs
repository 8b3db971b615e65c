//! Credentials are never printed: [`mask_credentials`] is the one function
//! that hides them, in any text that may hold a URL (a setting's value in a
//! warning, an error message, a report, the CLI's every line).
//!
//! A URL is masked whatever shape it has, well-formed or not, since a
//! malformed one is exactly what a warning echoes:
//! `redis://:pw@host` and `redis://user:pw@host` (the userinfo),
//! `redis://:pw` and `redis://user:pw` (no `@host`: everything after the
//! first `:` that is not a port), `https://TOKEN@host` (a token alone),
//! `redis://host/0?password=pw` (a query parameter that names a secret), and
//! `user:pw@proxy:3128` (a proxy without a scheme). Host, port, path and the
//! user name stay, so a message still says which server it means.

use std::borrow::Cow;

/// What stands in for a hidden credential.
pub const MASK: &str = "***";

/// `text` with every credential in a URL replaced by [`MASK`]; unchanged
/// (borrowed) when there is none.
///
/// ```
/// use cuda_toolchain::redact::mask_credentials;
/// assert_eq!(mask_credentials("redis://:pw@cache:6379/0"), "redis://:***@cache:6379/0");
/// assert_eq!(mask_credentials("CUDA_BUILD_CACHE_REDIS=`redis://user:pw`"), "CUDA_BUILD_CACHE_REDIS=`redis://user:***`");
/// assert_eq!(mask_credentials("redis://cache:6379/0?password=pw"), "redis://cache:6379/0?password=***");
/// assert_eq!(mask_credentials("see redis://cache:6379/0"), "see redis://cache:6379/0");
/// assert_eq!(mask_credentials("(redis://host:port[/db])"), "(redis://host:port[/db])");
/// ```
pub fn mask_credentials(text: &str) -> Cow<'_, str> {
    if !text.contains("://") && !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(is_delimiter).unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        let masked = mask_token(token);
        changed |= masked != token;
        out.push_str(&masked);
        let mut chars = after.chars();
        if let Some(d) = chars.next() {
            out.push(d);
        }
        rest = chars.as_str();
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Where a URL ends in running text: white space and the quotes messages
/// put around values.
fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '<' | '>')
}

/// One delimited token, masked.
fn mask_token(token: &str) -> String {
    match token.find("://") {
        Some(at) => {
            let (head, rest) = token.split_at(at + 3);
            format!("{head}{}", mask_after_scheme(rest))
        }
        None => mask_schemeless(token),
    }
}

/// Everything after `scheme://`.
fn mask_after_scheme(rest: &str) -> String {
    if let Some(at) = rest.rfind('@') {
        // A password may hold `/`, `?` or `@`: all before the last `@` is userinfo.
        let (userinfo, host) = rest.split_at(at);
        let user = match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:{MASK}"),
            // `https://TOKEN@host`: a lone userinfo may be the secret itself.
            None if userinfo.is_empty() => String::new(),
            None => MASK.to_string(),
        };
        return format!("{user}{}", mask_query(host));
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    // IPv6 literals (`[::1]:6379`) hold colons of their own.
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => (v6, None),
        },
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    match port {
        None => mask_query(rest),
        // `host:port`: nothing secret (an empty host or a number that is no
        // port is a password).
        Some(p) if !host.is_empty() && (p.is_empty() || p.parse::<u16>().is_ok()) => {
            mask_query(rest)
        }
        // The template help texts show (`redis://host:port[/db]`).
        Some(p)
            if !host.is_empty()
                && p.trim_end_matches(['[', ']', ')', ',', ';', '.'])
                    .eq_ignore_ascii_case("port") =>
        {
            mask_query(rest)
        }
        // `user:pw` or `:pw` with no `@host`: all after the first `:` may be
        // the password, `/` and all.
        Some(_) => {
            let colon = authority.find(':').unwrap_or(0);
            format!("{}:{MASK}", &rest[..colon])
        }
    }
}

/// Query parameters whose names say they hold a secret get [`MASK`] as value.
fn mask_query(s: &str) -> String {
    let Some((before, query)) = s.split_once('?') else {
        return s.to_string();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((name, _)) if names_a_secret(name) => format!("{name}={MASK}"),
            _ => p.to_string(),
        })
        .collect();
    format!("{before}?{}", params.join("&"))
}

/// Whether a query parameter's name says it holds a secret.
fn names_a_secret(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "pass", "pwd", "secret", "token", "key", "auth", "cred", "sig",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// `user:pw@host` without a scheme (how proxies are often written): the
/// part between the first `:` and the last `@` is hidden. A token whose
/// `@` comes before any `:` (`git@host:repo`, an e-mail address) is left alone.
fn mask_schemeless(token: &str) -> String {
    let Some(at) = token.rfind('@') else {
        return token.to_string();
    };
    // `NAME=user:pw@host`: the value starts after the last `=` before the `@`.
    let start = token[..at].rfind('=').map_or(0, |i| i + 1);
    match token[start..at].find(':') {
        Some(colon) => {
            let colon = start + colon;
            format!("{}:{MASK}{}", &token[..colon], &token[at..])
        }
        None => token.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form the password may take hides all of it, and keeps the
    /// host (where there is one) so the message still names the server.
    #[test]
    fn every_form_of_url_hides_its_password() {
        let cases = [
            ("redis://:PassWORD9", "redis://:***"),
            ("redis://:123456", "redis://:***"),
            ("redis://user:PassWORD9", "redis://user:***"),
            ("redis://:PassWORD9@h:6379", "redis://:***@h:6379"),
            (
                "redis://user:PassWORD9@h:6379/2",
                "redis://user:***@h:6379/2",
            ),
            ("redis://:PassWORD9@", "redis://:***@"),
            ("redis://:Pass@WORD9@h", "redis://:***@h"),
            ("redis://user:Pass/WORD9", "redis://user:***"),
            ("redis://:Pass/WORD9@h/0", "redis://:***@h/0"),
            ("rediss://PassWORD9@h", "rediss://***@h"),
            (
                "redis://h:6379/0?password=PassWORD9",
                "redis://h:6379/0?password=***",
            ),
            (
                "https://h/simple?db=1&token=PassWORD9",
                "https://h/simple?db=1&token=***",
            ),
            ("user:PassWORD9@proxy:3128", "user:***@proxy:3128"),
            (
                "HTTPS_PROXY=user:PassWORD9@proxy",
                "HTTPS_PROXY=user:***@proxy",
            ),
            ("`redis://:PassWORD9`, expected", "`redis://:***`, expected"),
        ];
        for (raw, want) in cases {
            let got = mask_credentials(raw);
            assert_eq!(got, want, "{raw}");
            assert!(
                !got.contains("WORD9") && !got.contains("Pass"),
                "{raw}: {got}"
            );
        }
    }

    #[test]
    fn text_without_credentials_is_unchanged() {
        for t in [
            "redis://cache:6379/0",
            "redis://[::1]:6379",
            "https://pypi.org/simple/nvidia-cuda-nvcc/",
            "git@github.com:org/repo.git",
            "mail a@b.example",
            "/tmp/x:y/z",
            "no url here",
        ] {
            assert!(matches!(mask_credentials(t), Cow::Borrowed(_)), "{t}");
        }
    }
}
