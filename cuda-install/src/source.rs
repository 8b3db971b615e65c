//! Where packages come from: the [`Source`] trait, and the package index
//! (PEP 691 JSON simple API, with the PEP 503 HTML page as a fallback).

use std::io::Read;

use cuda_toolchain::env::Env;
use cuda_toolchain::Error;

use crate::http::Http;

/// One downloadable file of one package version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Package name, e.g. `nvidia-cuda-nvcc`.
    pub package: String,
    /// Package version, e.g. `13.0.88`.
    pub version: String,
    /// File name, e.g. `nvidia_cuda_nvcc-13.0.88-py3-none-manylinux...x86_64.whl`.
    pub filename: String,
    /// Absolute download URL.
    pub url: String,
    /// The sha256 the source publishes (lowercase hex).
    pub sha256: String,
    /// Size in bytes, when published.
    pub size: Option<u64>,
    /// Upload time (`2025-09-04T...Z`), when published.
    pub uploaded: Option<String>,
}

/// A source of packages. The index is one; NVIDIA's redistributable manifest
/// (`redistrib_X.Y.Z.json`: per-component archive, sha256, size) fits the same shape.
pub trait Source {
    /// What to call this source in messages (its URL).
    fn name(&self) -> String;
    /// Every file of `package` that runs on this machine (all versions); empty when the
    /// source does not have the package.
    fn files(&self, package: &str) -> Result<Vec<Artifact>, Error>;
    /// Opens the download of one file.
    fn open(&self, artifact: &Artifact) -> Result<(Box<dyn Read + Send>, Option<u64>), Error>;
}

/// The default index.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";

/// The index URL to use: `--index-url`, then UV_INDEX_URL, then PIP_INDEX_URL, then PyPI;
/// with the name of the setting it came from, for messages.
pub fn index_url(explicit: Option<&str>, env: &Env) -> (String, &'static str) {
    let var = |name: &str| {
        env.iter()
            .find(|(v, _)| v.name() == name)
            .and_then(|(_, val)| val.to_str())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    if let Some(url) = explicit {
        return (url.to_string(), "--index-url");
    }
    if let Some(url) = var("UV_INDEX_URL") {
        return (url, "UV_INDEX_URL");
    }
    if let Some(url) = var("PIP_INDEX_URL") {
        return (url, "PIP_INDEX_URL");
    }
    (DEFAULT_INDEX.to_string(), "the default index")
}

/// A PEP 503/691 "simple" package index.
pub struct Index {
    base: String,
    setting: &'static str,
    http: Http,
}

impl Index {
    /// An index at `base` (e.g. `https://pypi.org/simple`); `setting` names where the URL came from.
    pub fn new(base: &str, setting: &'static str, http: Http) -> Index {
        Index {
            base: base.trim_end_matches('/').to_string(),
            setting,
            http,
        }
    }
}

/// PEP 503 name normalisation.
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The version in a wheel's file name (`name-1.2.3-py3-none-tag.whl`).
pub fn wheel_version(filename: &str) -> Option<&str> {
    let stem = filename.strip_suffix(".whl")?;
    stem.split('-').nth(1)
}

/// Whether a wheel's platform tag runs here (Linux on this CPU, or pure Python).
pub fn runs_here(filename: &str) -> bool {
    let Some(stem) = filename.strip_suffix(".whl") else {
        return false;
    };
    let Some(platform) = stem.rsplit('-').next() else {
        return false;
    };
    if platform == "any" {
        return true;
    }
    let arch = std::env::consts::ARCH;
    cfg!(target_os = "linux")
        && platform
            .split('.')
            .any(|p| (p.starts_with("manylinux") || p.starts_with("linux")) && p.ends_with(arch))
}

/// Resolves a link on an index page against the page's URL.
fn absolute(page: &str, link: &str) -> String {
    if link.starts_with("http://") || link.starts_with("https://") {
        return link.to_string();
    }
    let scheme_end = page.find("://").map_or(0, |i| i + 3);
    if let Some(rest) = link.strip_prefix('/') {
        let host_end = page[scheme_end..]
            .find('/')
            .map_or(page.len(), |i| scheme_end + i);
        return format!("{}/{rest}", &page[..host_end]);
    }
    let dir_end = page
        .rfind('/')
        .filter(|&i| i >= scheme_end)
        .unwrap_or(page.len());
    format!("{}/{link}", &page[..dir_end])
}

impl Index {
    fn parse_json(&self, package: &str, page: &str, body: &str) -> Result<Vec<Artifact>, Error> {
        let v: serde_json::Value = serde_json::from_str(body)
            .map_err(|e| self.bad_answer(page, &format!("its JSON does not parse ({e})")))?;
        let files = v
            .get("files")
            .and_then(|f| f.as_array())
            .ok_or_else(|| self.bad_answer(page, "the JSON has no `files` list (PEP 691)"))?;
        let mut out = Vec::new();
        for f in files {
            let (Some(filename), Some(url)) = (
                f.get("filename").and_then(|x| x.as_str()),
                f.get("url").and_then(|x| x.as_str()),
            ) else {
                continue;
            };
            let yanked = f.get("yanked").is_some_and(|y| y.as_bool() != Some(false));
            if yanked || !runs_here(filename) {
                continue;
            }
            let Some(sha) = f
                .get("hashes")
                .and_then(|h| h.get("sha256"))
                .and_then(|h| h.as_str())
            else {
                continue; // unverifiable: never installed
            };
            let Some(version) = wheel_version(filename) else {
                continue;
            };
            out.push(Artifact {
                package: package.to_string(),
                version: version.to_string(),
                filename: filename.to_string(),
                url: absolute(page, url.split('#').next().unwrap_or(url)),
                sha256: sha.to_ascii_lowercase(),
                size: f.get("size").and_then(|s| s.as_u64()),
                uploaded: f
                    .get("upload-time")
                    .and_then(|s| s.as_str())
                    .map(str::to_string),
            });
        }
        Ok(out)
    }

    /// PEP 503 HTML: `<a href="URL#sha256=HEX">FILE</a>`.
    fn parse_html(&self, package: &str, page: &str, body: &str) -> Result<Vec<Artifact>, Error> {
        let re = regex::Regex::new(
            r##"<[aA]\s[^>]*href="([^"#]+)#sha256=([0-9a-f]{64})"[^>]*>\s*([^<\s]+\.whl)\s*</a>"##,
        )
        .expect("valid regex");
        let out: Vec<Artifact> = re
            .captures_iter(body)
            .filter(|c| runs_here(&c[3]) && wheel_version(&c[3]).is_some())
            .map(|c| Artifact {
                package: package.to_string(),
                version: wheel_version(&c[3]).unwrap_or_default().to_string(),
                filename: c[3].to_string(),
                url: absolute(page, &c[1].replace("&amp;", "&")),
                sha256: c[2].to_ascii_lowercase(),
                size: None,
                uploaded: None,
            })
            .collect();
        if out.is_empty() && !body.to_ascii_lowercase().contains(".whl") {
            let title = regex::Regex::new(r"(?s)<(?:title|TITLE)>(.*?)</(?:title|TITLE)>")
                .expect("valid regex")
                .captures(body)
                .map(|c| format!(" (page title: `{}`)", c[1].trim()))
                .unwrap_or_default();
            return Err(self.bad_answer(
                page,
                &format!("it answered with an HTML page that lists no wheels{title}: a login page, a proxy's error page or not a package index"),
            ));
        }
        Ok(out)
    }

    fn bad_answer(&self, page: &str, what: &str) -> Error {
        Error::new(
            "install-bad-index",
            format!("the package index at `{page}` did not answer like a package index: {what}"),
        )
        .with_help(format!(
            "check the index URL (from {}): it must be a PEP 503/691 \"simple\" index such as {DEFAULT_INDEX}",
            self.setting
        ))
        .with_help("behind a proxy, set HTTPS_PROXY; nothing was installed")
    }
}

impl Source for Index {
    fn name(&self) -> String {
        self.base.clone()
    }

    fn files(&self, package: &str) -> Result<Vec<Artifact>, Error> {
        let page = format!("{}/{}/", self.base, normalize(package));
        let accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1";
        let Some((ctype, body)) = self.http.get_text(&page, accept, self.setting)? else {
            return Ok(Vec::new()); // 404: the index does not have it
        };
        if ctype.contains("json") || body.trim_start().starts_with('{') {
            self.parse_json(package, &page, &body)
        } else {
            self.parse_html(package, &page, &body)
        }
    }

    fn open(&self, a: &Artifact) -> Result<(Box<dyn Read + Send>, Option<u64>), Error> {
        self.http.open(&a.url, self.setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_versions_platforms() {
        assert_eq!(normalize("Nvidia_CUDA.nvcc"), "nvidia-cuda-nvcc");
        let f = "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
        assert_eq!(wheel_version(f), Some("13.0.88"));
        assert_eq!(
            runs_here(f),
            cfg!(all(target_os = "linux", target_arch = "x86_64"))
        );
        assert!(!runs_here(
            "nvidia_cuda_nvcc-13.0.88-py3-none-win_amd64.whl"
        ));
        assert!(!runs_here("nvidia_cuda_nvcc-13.0.88.tar.gz"));
    }

    #[test]
    fn links_resolve_against_the_page() {
        let page = "http://127.0.0.1:9/simple/x/";
        assert_eq!(absolute(page, "https://h/f.whl"), "https://h/f.whl");
        assert_eq!(
            absolute(page, "/files/f.whl"),
            "http://127.0.0.1:9/files/f.whl"
        );
        assert_eq!(absolute(page, "f.whl"), "http://127.0.0.1:9/simple/x/f.whl");
        assert_eq!(
            absolute(page, "../../f.whl"),
            "http://127.0.0.1:9/simple/x/../../f.whl"
        );
    }
}
