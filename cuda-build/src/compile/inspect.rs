//! Reading what nvcc produced: PTX `.version`/`.target`/`.entry` lines, the
//! SM and kernel symbols of a cubin (ELF), and the entries of a fatbin.
//!
//! These readers are small and dependency-free on purpose: the generated
//! module needs kernel names, and the tests need to check that an output
//! holds exactly the planned archs without `cuobjdump`.
//!
//! Formats, as produced by nvcc 13.0 (checked against its output here):
//! - **cubin**: ELF64, little endian, `e_machine` 190 (EM_CUDA). With ELF ABI
//!   version 8 and later (`e_ident[EI_ABIVERSION]`) the SM number is
//!   `(e_flags >> 8) & 0xff`; before that it is `e_flags & 0xff`. The `a`/`f`
//!   variant is not in `e_flags` (sm_90 and sm_90a cubins share them); it is
//!   read from the ptxas command line recorded in `.note.nv.tkinfo`
//!   (`-arch sm_90a`). Kernels are `STT_FUNC` symbols with the
//!   `STO_CUDA_ENTRY` bit (0x10) in `st_other`.
//! - **fatbin**: a 16-byte header (magic `0xBA55ED50`, u16 version, u16
//!   header size, u64 payload size) and entries, each with a header of u16
//!   kind (1 = PTX, 2 = ELF), u16 version, u32 header size, u64 payload size,
//!   …, u32 arch at offset 0x1c and u64 flags at offset 0x28, where bit 20
//!   marks an arch-specific (`a`) and bit 21 a family (`f`) target.

use crate::arch::{Arch, ComputeCapability, Variant};

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

/// Reads `.version`, `.target` and `.entry` names from PTX text.
///
/// ```
/// let ptx = ".version 9.0\n.target sm_90\n.visible .entry vectorAdd(\n";
/// let info = cuda_build::compile::inspect::read_ptx(ptx);
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
            let mut it = rest.trim().split('.');
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                if let (Ok(a), Ok(b)) = (a.trim().parse(), b.trim().parse()) {
                    info.version = Some((a, b));
                }
            }
        } else if let Some(rest) = line.strip_prefix(".target") {
            info.target = rest
                .split(|c: char| c == ',' || c.is_whitespace())
                .find(|s| !s.is_empty())
                .map(str::to_string);
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

/// What a cubin (CUDA ELF) says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubinInfo {
    /// The SM number from `e_flags`, e.g. 90.
    pub sm: u32,
    /// The arch, with the variant read from `.note.nv.tkinfo` when present.
    pub arch: Arch,
    /// `e_ident[EI_ABIVERSION]`.
    pub abi_version: u8,
    /// Kernel names (`STO_CUDA_ENTRY` functions), in symbol-table order.
    pub entries: Vec<String>,
}

const EM_CUDA: u16 = 190;

struct Elf<'a> {
    data: &'a [u8],
    sections: Vec<Section>,
    shstrndx: usize,
}

#[derive(Clone, Copy)]
struct Section {
    name: u32,
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
}

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    d.get(off..off + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
}
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    d.get(off..off + 8).map(|b| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    })
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Elf<'a>, String> {
        if data.len() < 64 || &data[..4] != b"\x7fELF" {
            return Err("not an ELF file (no \\x7fELF magic)".into());
        }
        if data[4] != 2 || data[5] != 1 {
            return Err("not a 64-bit little-endian ELF file".into());
        }
        let bad = || "truncated ELF header".to_string();
        let shoff = u64_at(data, 0x28).ok_or_else(bad)? as usize;
        let shentsize = u16_at(data, 0x3a).ok_or_else(bad)? as usize;
        let shnum = u16_at(data, 0x3c).ok_or_else(bad)? as usize;
        let shstrndx = u16_at(data, 0x3e).ok_or_else(bad)? as usize;
        if shentsize < 64 && shnum > 0 {
            return Err(format!("unexpected ELF section header size {shentsize}"));
        }
        let mut sections = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let base = shoff
                .checked_add(i * shentsize)
                .ok_or("ELF section table out of range")?;
            let h = data
                .get(base..base + 64)
                .ok_or("ELF section table is truncated")?;
            let s = Section {
                name: u32_at(h, 0).unwrap_or(0),
                kind: u32_at(h, 4).unwrap_or(0),
                offset: u64_at(h, 24).unwrap_or(0) as usize,
                size: u64_at(h, 32).unwrap_or(0) as usize,
                link: u32_at(h, 40).unwrap_or(0),
            };
            sections.push(s);
        }
        Ok(Elf {
            data,
            sections,
            shstrndx,
        })
    }

    fn bytes(&self, s: &Section) -> &'a [u8] {
        // SHT_NOBITS (8) has no file bytes.
        if s.kind == 8 {
            return &[];
        }
        self.data
            .get(s.offset..s.offset.saturating_add(s.size))
            .unwrap_or(&[])
    }

    fn str_at(&self, table: usize, off: u32) -> &'a str {
        let Some(sec) = self.sections.get(table) else {
            return "";
        };
        let bytes = self.bytes(sec);
        let start = (off as usize).min(bytes.len());
        let end = bytes[start..]
            .iter()
            .position(|&b| b == 0)
            .map_or(bytes.len(), |p| start + p);
        std::str::from_utf8(&bytes[start..end]).unwrap_or("")
    }

    fn section(&self, name: &str) -> Option<&'a [u8]> {
        self.sections
            .iter()
            .find(|s| self.str_at(self.shstrndx, s.name) == name)
            .map(|s| self.bytes(s))
    }

    fn entry_symbols(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == 2) {
            let bytes = self.bytes(s);
            for sym in bytes.chunks_exact(24) {
                let name = u32_at(sym, 0).unwrap_or(0);
                let (info, other) = (sym[4], sym[5]);
                // STT_FUNC with STO_CUDA_ENTRY: a __global__ kernel.
                if info & 0xf == 2 && other & 0x10 != 0 {
                    let n = self.str_at(s.link as usize, name);
                    if !n.is_empty() && !out.iter().any(|o| o == n) {
                        out.push(n.to_string());
                    }
                }
            }
        }
        out
    }
}

/// Returns the bytes of the named section of any ELF64 file (e.g. `.nv_fatbin`
/// of a host object that embeds device code).
pub fn elf_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    Elf::parse(bytes).ok()?.section(name)
}

/// Reads the SM, variant and kernel names of a cubin.
pub fn read_cubin(bytes: &[u8]) -> Result<CubinInfo, String> {
    let elf = Elf::parse(bytes)?;
    let machine = u16_at(bytes, 0x12).unwrap_or(0);
    if machine != EM_CUDA {
        return Err(format!(
            "ELF e_machine is {machine}, expected {EM_CUDA} (CUDA)"
        ));
    }
    let abi_version = bytes[8];
    let flags = u32_at(bytes, 0x30).unwrap_or(0);
    let sm = if abi_version >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    };
    let mut arch = Arch::new(sm / 10, sm % 10);
    if let Some(note) = elf.section(".note.nv.tkinfo") {
        if let Some(v) = variant_from_tool_args(note, sm) {
            arch = arch.with_variant(v);
        }
    }
    Ok(CubinInfo {
        sm,
        arch,
        abi_version,
        entries: elf.entry_symbols(),
    })
}

/// Finds `-arch sm_<sm><suffix>` in a tool-info note and returns the variant.
fn variant_from_tool_args(note: &[u8], sm: u32) -> Option<Variant> {
    let text = String::from_utf8_lossy(note);
    let needle = format!("-arch sm_{sm}");
    let pos = text.find(&needle)?;
    match text[pos + needle.len()..].chars().next() {
        Some('a') => Some(Variant::Specific),
        Some('f') => Some(Variant::Family),
        _ => Some(Variant::Plain),
    }
}

/// The kind of one fatbin entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatbinKind {
    /// PTX text (possibly compressed), JIT-compiled by the driver.
    Ptx,
    /// A cubin (SASS).
    Elf,
}

/// One entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    /// PTX or ELF.
    pub kind: FatbinKind,
    /// The arch, with its variant.
    pub arch: Arch,
    /// Byte range of the payload within the fatbin.
    pub payload: std::ops::Range<usize>,
}

impl FatbinEntry {
    /// `sm_90` for ELF entries, `compute_90` for PTX entries.
    pub fn target_name(&self) -> String {
        match self.kind {
            FatbinKind::Elf => self.arch.sm_name(),
            FatbinKind::Ptx => self.arch.compute_name(),
        }
    }
}

const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// Reads every entry of a fatbin (one or more concatenated fatbin blocks).
pub fn read_fatbin(bytes: &[u8]) -> Result<Vec<FatbinEntry>, String> {
    let mut out = Vec::new();
    let mut block = 0usize;
    while block + 16 <= bytes.len() {
        let magic = u32_at(bytes, block).unwrap_or(0);
        if magic != FATBIN_MAGIC {
            if block == 0 {
                return Err(format!(
                    "not a fatbin: magic is {magic:#010x}, expected {FATBIN_MAGIC:#010x}"
                ));
            }
            // Padding between blocks (e.g. in a host object's .nv_fatbin).
            block += 8;
            continue;
        }
        let header = u16_at(bytes, block + 6).unwrap_or(16) as usize;
        let size = u64_at(bytes, block + 8).unwrap_or(0) as usize;
        let end = block
            .checked_add(header)
            .and_then(|x| x.checked_add(size))
            .filter(|&e| e <= bytes.len())
            .ok_or("fatbin is truncated")?;
        let mut off = block + header;
        while off + 0x30 <= end {
            let kind = u16_at(bytes, off).unwrap_or(0);
            let eh = u32_at(bytes, off + 4).unwrap_or(0) as usize;
            let psize = u64_at(bytes, off + 8).unwrap_or(0) as usize;
            let arch = u32_at(bytes, off + 0x1c).unwrap_or(0);
            let flags = u64_at(bytes, off + 0x28).unwrap_or(0);
            if eh < 0x30 {
                return Err(format!("fatbin entry at {off:#x} has header size {eh}"));
            }
            let start = off + eh;
            let stop = start
                .checked_add(psize)
                .filter(|&s| s <= end)
                .ok_or_else(|| format!("fatbin entry at {off:#x} is truncated"))?;
            let kind = match kind {
                1 => FatbinKind::Ptx,
                2 => FatbinKind::Elf,
                k => return Err(format!("unknown fatbin entry kind {k} at {off:#x}")),
            };
            let variant = if flags & (1 << 20) != 0 {
                Variant::Specific
            } else if flags & (1 << 21) != 0 {
                Variant::Family
            } else {
                Variant::Plain
            };
            out.push(FatbinEntry {
                kind,
                arch: Arch {
                    cc: ComputeCapability::new(arch / 10, arch % 10),
                    variant,
                },
                payload: start..stop,
            });
            off = stop;
        }
        block = end;
    }
    if out.is_empty() {
        return Err("fatbin has no entries".into());
    }
    Ok(out)
}

/// Kernel names in a fatbin, read from its (uncompressed) ELF entries.
///
/// PTX entries are usually compressed, so a fatbin with only PTX yields none.
pub fn fatbin_kernels(bytes: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for e in read_fatbin(bytes).unwrap_or_default() {
        let payload = &bytes[e.payload.clone()];
        let found = match e.kind {
            FatbinKind::Elf => read_cubin(payload).map(|c| c.entries).unwrap_or_default(),
            FatbinKind::Ptx => match std::str::from_utf8(payload) {
                Ok(text) if text.contains(".version") => read_ptx(text).entries,
                _ => Vec::new(),
            },
        };
        for n in found {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
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
        assert_eq!(info.entries, ["k1", "_Z2k2v"]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(read_cubin(b"hello").is_err());
        assert!(read_fatbin(b"hello world, not a fatbin").is_err());
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[0x28] = 0xff; // section table far out of range
        elf[0x3a] = 64;
        elf[0x3c] = 3;
        assert!(read_cubin(&elf).is_err());
        let mut fb = Vec::new();
        fb.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fb.extend_from_slice(&[1, 0, 16, 0]);
        fb.extend_from_slice(&1000u64.to_le_bytes());
        assert!(read_fatbin(&fb).unwrap_err().contains("truncated"));
    }
}
