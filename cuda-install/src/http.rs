//! HTTP(S) through ureq with rustls: proxies from the usual variables,
//! timeouts on every request, and errors that name the URL and the setting.

use std::io::Read;
use std::time::Duration;

use cuda_toolchain::env::{Env, Var};
use cuda_toolchain::Error;

/// An HTTP client with this machine's proxy settings.
#[derive(Clone)]
pub struct Http {
    direct: ureq::Agent,
    https_proxy: Option<(ureq::Agent, String)>,
    http_proxy: Option<(ureq::Agent, String)>,
    no_proxy: Vec<String>,
}

fn agent(proxy: Option<ureq::Proxy>) -> ureq::Agent {
    let mut b = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        // Per read, not per download: a stalled connection fails, a slow one does not.
        .timeout_read(Duration::from_secs(60))
        .user_agent(concat!("cargo-cuda/", env!("CARGO_PKG_VERSION")));
    if let Some(p) = proxy {
        b = b.proxy(p);
    }
    b.build()
}

fn first(env: &Env, vars: &[Var]) -> Option<(String, &'static str)> {
    vars.iter()
        .find_map(|&v| env.get_nonempty(v).map(|s| (s.to_string(), v.name())))
}

impl Http {
    /// A client for `env`'s HTTPS_PROXY / HTTP_PROXY / NO_PROXY (either case).
    pub fn new(env: &Env) -> Result<Http, Error> {
        let proxy = |vars: &[Var]| -> Result<Option<(ureq::Agent, String)>, Error> {
            let Some((url, name)) = first(env, vars) else {
                return Ok(None);
            };
            let p = ureq::Proxy::new(&url).map_err(|e| {
                Error::new(
                    "install-bad-proxy",
                    format!("{name} is `{url}`, which is not a proxy URL ({e})"),
                )
                .with_help(format!(
                    "set {name} to a URL such as http://proxy.example:3128, or unset it"
                ))
            })?;
            Ok(Some((agent(Some(p)), url)))
        };
        let no_proxy = first(env, &[Var::NoProxy, Var::NoProxyLower])
            .map(|(s, _)| {
                s.split(',')
                    .map(|h| h.trim().trim_start_matches('.').to_ascii_lowercase())
                    .filter(|h| !h.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Http {
            direct: agent(None),
            https_proxy: proxy(&[Var::HttpsProxy, Var::HttpsProxyLower])?,
            http_proxy: proxy(&[Var::HttpProxy, Var::HttpProxyLower])?,
            no_proxy,
        })
    }

    fn agent_for(&self, url: &str) -> &ureq::Agent {
        let host = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split(['/', ':']).next())
            .unwrap_or("")
            .to_ascii_lowercase();
        let local = host == "localhost" || host == "127.0.0.1" || host == "[";
        let exempt = local
            || self
                .no_proxy
                .iter()
                .any(|n| n == "*" || host == *n || host.ends_with(&format!(".{n}")));
        let proxied = if url.starts_with("https://") {
            &self.https_proxy
        } else {
            &self.http_proxy
        };
        match proxied {
            Some((a, _)) if !exempt => a,
            _ => &self.direct,
        }
    }

    fn call(
        &self,
        url: &str,
        accept: &str,
        setting: &str,
    ) -> Result<Option<ureq::Response>, Error> {
        match self.agent_for(url).get(url).set("Accept", accept).call() {
            Ok(r) => Ok(Some(r)),
            Err(ureq::Error::Status(404, _)) => Ok(None),
            Err(ureq::Error::Status(code, r)) => Err(Error::new(
                "install-network",
                format!("`{url}` answered HTTP {code} {}", r.status_text()),
            )
            .with_help(format!(
                "check the index URL (from {setting}) and, behind a proxy, HTTPS_PROXY; nothing was installed, rerun when the index answers"
            ))),
            Err(ureq::Error::Transport(t)) => Err(network_error(url, &t.to_string(), setting)),
        }
    }

    /// GETs a text page: `(content type, body)`, or `None` for 404.
    pub fn get_text(
        &self,
        url: &str,
        accept: &str,
        setting: &str,
    ) -> Result<Option<(String, String)>, Error> {
        let Some(r) = self.call(url, accept, setting)? else {
            return Ok(None);
        };
        let ctype = r.content_type().to_ascii_lowercase();
        let mut body = String::new();
        r.into_reader()
            .take(64 << 20)
            .read_to_string(&mut body)
            .map_err(|e| network_error(url, &e.to_string(), setting))?;
        Ok(Some((ctype, body)))
    }

    /// Opens a download: the body and its announced length.
    pub fn open(
        &self,
        url: &str,
        setting: &str,
    ) -> Result<(Box<dyn Read + Send>, Option<u64>), Error> {
        let r = self
            .call(url, "*/*", setting)?
            .ok_or_else(|| {
                Error::new("install-network", format!("`{url}` answered 404 Not Found"))
                    .with_help("the index lists a file it does not serve; retry later, or use another index (--index-url)")
            })?;
        let len = r.header("Content-Length").and_then(|l| l.parse().ok());
        Ok((r.into_reader(), len))
    }
}

/// A failed connection or transfer, naming the URL and what to do.
pub fn network_error(url: &str, what: &str, setting: &str) -> Error {
    Error::new(
        "install-network",
        format!("could not download `{url}`: {what}"),
    )
    .with_help(format!(
        "check the network, the index URL (from {setting}) and, behind a proxy, HTTPS_PROXY; nothing was installed: rerun the same command"
    ))
}
