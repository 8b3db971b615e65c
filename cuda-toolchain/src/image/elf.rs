//! A bounds-checked ELF64 little-endian reader: section lookup for any ELF
//! (host binaries, objects) and the SM, variant, toolkit and kernels of a
//! cubin (`e_machine` 190, EM_CUDA).
//!
//! Every offset and size comes from the file, so every sum is checked and
//! every slice is taken with `get`: a corrupt header is an error or an empty
//! answer, never a panic.
//!
//! Cubin facts (checked against nvcc 13.0 output): with ELF ABI version 8 and
//! later (`e_ident[EI_ABIVERSION]`) the SM number is `(e_flags >> 8) & 0xff`,
//! before that `e_flags & 0xff`. The `a`/`f` variant is not in `e_flags`; it
//! is read from the ptxas command line recorded in `.note.nv.tkinfo`
//! (`-arch sm_90a`), which also names the toolkit (`Cuda compilation tools,
//! release 13.0, V13.0.88`). Kernels are `STT_FUNC` symbols with the
//! `STO_CUDA_ENTRY` bit (0x10) in `st_other`.

use crate::arch::{Arch, Variant};

/// `e_machine` of a CUDA cubin.
pub const EM_CUDA: u16 = 190;
const ELF_HEADER: usize = 64;
const SECTION_HEADER: usize = 64;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_NOBITS: u32 = 8;

pub(crate) fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    let b = d.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    let b = d.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// `u64` from the file as a `usize` offset or size (saturating on 32-bit).
fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Whether `d` starts like an ELF64 little-endian file.
pub fn is_elf64_le(d: &[u8]) -> bool {
    d.len() >= ELF_HEADER && d.starts_with(b"\x7fELF") && d[4] == 2 && d[5] == 1
}

/// The `e_machine` of an ELF64 little-endian file.
pub fn machine(d: &[u8]) -> Option<u16> {
    is_elf64_le(d).then(|| u16_at(d, 0x12)).flatten()
}

#[derive(Clone, Copy, Debug)]
struct Section {
    name: u32,
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
}

/// A parsed ELF64 little-endian file: its section table, checked.
pub(crate) struct Elf<'a> {
    data: &'a [u8],
    sections: Vec<Section>,
    shstrndx: usize,
}

impl<'a> Elf<'a> {
    pub(crate) fn parse(data: &'a [u8]) -> Result<Elf<'a>, String> {
        if data.len() < ELF_HEADER || !data.starts_with(b"\x7fELF") {
            return Err("not an ELF file (no \\x7fELF magic)".into());
        }
        if !is_elf64_le(data) {
            return Err("not a 64-bit little-endian ELF file".into());
        }
        let bad = || "truncated ELF header".to_string();
        let shoff = to_usize(u64_at(data, 0x28).ok_or_else(bad)?);
        let shentsize = usize::from(u16_at(data, 0x3a).ok_or_else(bad)?);
        let shnum = usize::from(u16_at(data, 0x3c).ok_or_else(bad)?);
        let shstrndx = usize::from(u16_at(data, 0x3e).ok_or_else(bad)?);
        if shnum > 0 && shentsize < SECTION_HEADER {
            return Err(format!(
                "ELF section header size is {shentsize}, expected at least {SECTION_HEADER}"
            ));
        }
        let mut sections = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let h = i
                .checked_mul(shentsize)
                .and_then(|o| shoff.checked_add(o))
                .and_then(|b| data.get(b..b.checked_add(SECTION_HEADER)?))
                .ok_or_else(|| {
                    format!(
                        "ELF section table ({shnum} entries at offset {shoff:#x}) runs past the end of the {} bytes",
                        data.len()
                    )
                })?;
            sections.push(Section {
                name: u32_at(h, 0).unwrap_or(0),
                kind: u32_at(h, 4).unwrap_or(0),
                offset: to_usize(u64_at(h, 24).unwrap_or(0)),
                size: to_usize(u64_at(h, 32).unwrap_or(0)),
                link: u32_at(h, 40).unwrap_or(0),
            });
        }
        Ok(Elf {
            data,
            sections,
            shstrndx,
        })
    }

    /// The file bytes of a section; empty when it has none or they lie
    /// outside the file.
    fn bytes(&self, s: &Section) -> &'a [u8] {
        if s.kind == SHT_NOBITS {
            return &[];
        }
        s.offset
            .checked_add(s.size)
            .and_then(|end| self.data.get(s.offset..end))
            .unwrap_or(&[])
    }

    fn str_at(&self, table: usize, off: u32) -> &'a str {
        let Some(sec) = self.sections.get(table) else {
            return "";
        };
        let bytes = self.bytes(sec);
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(bytes.len());
        let rest = &bytes[start..];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    fn find(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| self.str_at(self.shstrndx, s.name) == name)
    }

    /// The bytes of the named section.
    pub(crate) fn section(&self, name: &str) -> Option<&'a [u8]> {
        self.find(name).map(|s| self.bytes(s))
    }

    /// The file range of the named section, checked against the file size.
    pub(crate) fn section_range(&self, name: &str) -> Option<std::ops::Range<usize>> {
        let s = self.find(name)?;
        let end = s.offset.checked_add(s.size)?;
        (s.kind != SHT_NOBITS && end <= self.data.len()).then_some(s.offset..end)
    }

    /// The byte length the headers claim: the furthest end of the section
    /// table and of every section with file bytes. Used to cut a cubin that
    /// is embedded in a larger file.
    pub(crate) fn claimed_len(&self) -> usize {
        let table_end = u64_at(self.data, 0x28)
            .map(to_usize)
            .unwrap_or(0)
            .saturating_add(self.sections.len().saturating_mul(SECTION_HEADER));
        // Program headers (and the segments they describe) may lie after
        // the last section.
        let phoff = u64_at(self.data, 0x20).map(to_usize).unwrap_or(0);
        let phentsize = usize::from(u16_at(self.data, 0x36).unwrap_or(0));
        let phnum = usize::from(u16_at(self.data, 0x38).unwrap_or(0));
        let mut end = table_end.max(ELF_HEADER);
        if phnum > 0 && phentsize >= 56 {
            end = end.max(phoff.saturating_add(phnum.saturating_mul(phentsize)));
            for i in 0..phnum {
                let Some(h) = i
                    .checked_mul(phentsize)
                    .and_then(|o| phoff.checked_add(o))
                    .and_then(|b| self.data.get(b..b.checked_add(56)?))
                else {
                    break;
                };
                let off = to_usize(u64_at(h, 8).unwrap_or(0));
                let filesz = to_usize(u64_at(h, 32).unwrap_or(0));
                end = end.max(off.saturating_add(filesz));
            }
        }
        self.sections
            .iter()
            .filter(|s| s.kind != SHT_NOBITS)
            .map(|s| s.offset.saturating_add(s.size))
            .fold(end, usize::max)
    }

    /// The image's content without its layout, for comparing code: every
    /// section but the string tables, in order, each after its name; each
    /// symbol without its string offset, after its name; every name passed
    /// through `name`. Two images whose names differ only in ways `name`
    /// takes out give the same bytes, though their string tables (and so
    /// every offset after them) differ in length.
    pub(crate) fn content_without_layout(&self, name: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        let mut out = Vec::new();
        for s in &self.sections {
            out.extend(name(self.str_at(self.shstrndx, s.name).as_bytes()));
            out.push(0);
            out.extend(s.kind.to_le_bytes());
            match s.kind {
                SHT_STRTAB => {}
                SHT_SYMTAB => {
                    let table = usize::try_from(s.link).unwrap_or(usize::MAX);
                    for sym in self.bytes(s).chunks_exact(24) {
                        let at = u32_at(sym, 0).unwrap_or(0);
                        out.extend(name(self.str_at(table, at).as_bytes()));
                        out.push(0);
                        out.extend_from_slice(&sym[4..]);
                    }
                }
                _ => out.extend_from_slice(self.bytes(s)),
            }
        }
        out
    }

    fn entry_symbols(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == SHT_SYMTAB) {
            for sym in self.bytes(s).chunks_exact(24) {
                let name = u32_at(sym, 0).unwrap_or(0);
                let (info, other) = (sym[4], sym[5]);
                // STT_FUNC with STO_CUDA_ENTRY: a __global__ kernel.
                if info & 0xf == 2 && other & 0x10 != 0 {
                    let n = self.str_at(usize::try_from(s.link).unwrap_or(usize::MAX), name);
                    if !n.is_empty() && !out.iter().any(|o| o == n) {
                        out.push(n.to_string());
                    }
                }
            }
        }
        out
    }
}

/// The bytes of the named section of any ELF64 file (e.g. `.nv_fatbin` of a
/// host object that embeds device code).
pub fn elf_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    Elf::parse(bytes).ok()?.section(name)
}

/// The file range of the named section of an ELF64 file, if it lies within
/// `bytes` (e.g. `.rodata`, to scan only that part of a large binary).
pub fn elf_section_range(bytes: &[u8], name: &str) -> Option<std::ops::Range<usize>> {
    Elf::parse(bytes).ok()?.section_range(name)
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
    /// The CUDA release that built it, from `.note.nv.tkinfo` (`13.0.88`).
    pub toolkit: Option<semver::Version>,
    /// How many bytes the headers say the cubin spans.
    pub len: usize,
}

/// Reads the SM, variant, toolkit and kernel names of a cubin.
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
    if sm == 0 {
        return Err(format!("cubin e_flags {flags:#x} name no SM"));
    }
    let mut arch = Arch::new(sm / 10, sm % 10);
    let mut toolkit = None;
    if let Some(note) = elf.section(".note.nv.tkinfo") {
        let text = String::from_utf8_lossy(note);
        if let Some(v) = variant_from_tool_args(&text, sm) {
            arch = arch.with_variant(v);
        }
        toolkit = text
            .find("Cuda compilation tools")
            .and_then(|p| crate::tool_version::parse_tool_version(&text[p..]));
    }
    Ok(CubinInfo {
        sm,
        arch,
        abi_version,
        entries: elf.entry_symbols(),
        toolkit,
        len: elf.claimed_len(),
    })
}

/// Finds `-arch sm_<sm><suffix>` in a tool-info note and returns the variant.
fn variant_from_tool_args(text: &str, sm: u32) -> Option<Variant> {
    let needle = format!("-arch sm_{sm}");
    let pos = text.find(&needle)?;
    match text[pos + needle.len()..].chars().next() {
        Some('a') => Some(Variant::Specific),
        Some('f') => Some(Variant::Family),
        _ => Some(Variant::Plain),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_headers_are_errors() {
        assert!(read_cubin(b"hello").is_err());
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        // Section table offset near u64::MAX: the sum must not overflow.
        elf[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        elf[0x3a] = 64;
        elf[0x3c] = 3;
        assert!(read_cubin(&elf).unwrap_err().contains("section table"));
        assert_eq!(elf_section(&elf, ".rodata"), None);
        // A huge section entry size with many sections.
        elf[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&u16::MAX.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(Elf::parse(&elf).is_err());
    }

    #[test]
    fn own_executable_has_rodata() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let r = elf_section_range(&exe, ".rodata").expect(".rodata");
        assert!(!r.is_empty() && r.end <= exe.len());
        assert_eq!(machine(&exe), Some(62));
    }
}
