//! PTX text: the `.version` (ISA), `.target` and `.entry` lines, and finding
//! PTX that is embedded as text in a larger file (`include_str!`).

use crate::arch::Arch;

/// What a PTX file says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PtxInfo {
    /// The PTX ISA version from `.version`, e.g. `(9, 0)`.
    pub version: Option<(u32, u32)>,
    /// The `.target` line's first target, e.g. `sm_90`.
    pub target: Option<String>,
    /// Kernel names from `.entry` lines, in file order.
    pub entries: Vec<String>,
}

impl PtxInfo {
    /// The `.target` as an arch (`sm_90a` → 90a).
    pub fn arch(&self) -> Option<Arch> {
        let t = self.target.as_deref()?;
        let n = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))?;
        Arch::parse(n).ok()
    }
}

/// Reads `.version`, `.target` and `.entry` names from PTX text.
///
/// ```
/// let ptx = ".version 9.0\n.target sm_90\n.visible .entry vectorAdd(\n";
/// let info = cuda_toolchain::image::read_ptx(ptx);
/// assert_eq!(info.version, Some((9, 0)));
/// assert_eq!(info.target.as_deref(), Some("sm_90"));
/// assert_eq!(info.entries, ["vectorAdd"]);
/// ```
pub fn read_ptx(text: &str) -> PtxInfo {
    let mut info = PtxInfo::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") {
            continue;
        }
        if let Some(rest) = line.strip_prefix(".version") {
            if info.version.is_none() {
                info.version = parse_isa(rest);
            }
        } else if let Some(rest) = line.strip_prefix(".target") {
            if info.target.is_none() {
                info.target = rest
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .find(|s| !s.is_empty())
                    .map(str::to_string);
            }
        } else if let Some(pos) = line.find(".entry ") {
            // `.visible .entry name(` or `.entry name (`; `.weak .entry` too.
            let rest = line[pos + ".entry ".len()..].trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '(')
                .collect();
            if !name.is_empty() && !info.entries.contains(&name) {
                info.entries.push(name);
            }
        }
    }
    info
}

/// `" 9.0"` → (9, 0).
fn parse_isa(rest: &str) -> Option<(u32, u32)> {
    let v = rest.split_whitespace().next()?;
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Bytes PTX text may contain: printable ASCII and whitespace.
fn is_ptx_byte(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e)
}

/// How far back from `.version` the text may start (nvcc's comment header
/// is a few hundred bytes).
const MAX_LEAD: usize = 4096;

/// If a `.version X.Y` at `at` starts a PTX module (a `.target` follows
/// within a few lines), the byte range of that text: back over its comment
/// header, forward while the bytes are text.
pub(crate) fn ptx_extent(data: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    // `.version` must start a line (or the data).
    if at > 0 && !matches!(data[at - 1], b'\n' | b'\r' | b' ' | b'\t') {
        return None;
    }
    let head = data.get(at..at.saturating_add(256).min(data.len()))?;
    let head = std::str::from_utf8(
        &head[..head
            .iter()
            .position(|&b| !is_ptx_byte(b))
            .unwrap_or(head.len())],
    )
    .ok()?;
    let mut lines = head.lines();
    parse_isa(lines.next()?.strip_prefix(".version")?)?;
    if !lines
        .take(4)
        .any(|l| l.trim_start().starts_with(".target "))
    {
        return None;
    }
    let lead_floor = at.saturating_sub(MAX_LEAD);
    let start = data[lead_floor..at]
        .iter()
        .rposition(|&b| !is_ptx_byte(b))
        .map_or(lead_floor, |p| lead_floor + p + 1);
    let end = data[at..]
        .iter()
        .position(|&b| !is_ptx_byte(b))
        .map_or(data.len(), |p| at + p);
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_lines() {
        let ptx = "//\n// .entry fake(\n.version 8.7\n.target sm_80, debug\n\
                   .address_size 64\n.visible .entry k1(\n.weak .entry _Z2k2v (\n";
        let info = read_ptx(ptx);
        assert_eq!(info.version, Some((8, 7)));
        assert_eq!(info.target.as_deref(), Some("sm_80"));
        assert_eq!(info.arch(), Some(Arch::new(8, 0)));
        assert_eq!(info.entries, ["k1", "_Z2k2v"]);
    }

    #[test]
    fn embedded_text_is_cut_at_binary_bytes() {
        let mut data = vec![0u8, 1, 2];
        data.extend_from_slice(b"// header\n.version 9.0\n.target sm_90a\n.entry k()\n{}\n");
        data.extend_from_slice(&[0xff, 0x00, b'x']);
        let at = 3 + "// header\n".len();
        let r = ptx_extent(&data, at).unwrap();
        assert_eq!(r, 3..data.len() - 3);
        // `.version` without a `.target` is not PTX.
        assert_eq!(ptx_extent(b".version 1.0\nhello\n", 0), None);
        assert_eq!(ptx_extent(b"x.version 9.0\n.target sm_90\n", 1), None);
    }
}
