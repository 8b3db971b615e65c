//! Light structural checks of what a compiler wrote, before the build uses
//! or caches it: an nvcc (or wrapper) that exits 0 with a truncated or
//! missing file must fail the build, not end up as a kernel with no
//! entries. Only headers and sizes are checked, with bounds-checked reads;
//! reading the contents is `inspect`'s job.

use crate::compile::output::artifacts::OutputKind;
use std::path::Path;

/// Checks the output file `path` of the given kind; the error says what is wrong.
pub(crate) fn output(kind: OutputKind, path: &Path) -> Result<(), String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("was not written".into()),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    if bytes.is_empty() {
        return Err("is empty".into());
    }
    let r = match kind {
        OutputKind::Ptx => ptx(&bytes),
        OutputKind::Cubin => elf(&bytes, Some(EM_CUDA)),
        OutputKind::Fatbin => fatbin(&bytes),
        OutputKind::StaticLib => elf(&bytes, None),
    };
    r.map_err(|why| {
        format!(
            "is not a valid {} ({why}, {} bytes)",
            name(kind),
            bytes.len()
        )
    })
}

fn name(kind: OutputKind) -> &'static str {
    match kind {
        OutputKind::Ptx => "PTX file",
        OutputKind::Cubin => "cubin",
        OutputKind::Fatbin => "fatbin",
        OutputKind::StaticLib => "object file",
    }
}

const EM_CUDA: u16 = 190;
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// `.version` and `.target` directives, and balanced braces (a cut file ends inside a body).
pub(crate) fn ptx(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text")?;
    let directive = |d: &str| {
        text.lines().map(str::trim_start).any(|l| {
            l.strip_prefix(d)
                .is_some_and(|r| r.starts_with([' ', '\t']))
        })
    };
    if !directive(".version") {
        return Err("no `.version` directive".into());
    }
    if !directive(".target") {
        return Err("no `.target` directive".into());
    }
    let open = text.bytes().filter(|&b| b == b'{').count();
    let close = text.bytes().filter(|&b| b == b'}').count();
    if open != close {
        return Err(format!(
            "{open} `{{` but {close} `}}`: the file is cut short"
        ));
    }
    Ok(())
}

/// ELF64 little-endian: header, section table and every section inside the file.
pub(crate) fn elf(d: &[u8], machine: Option<u16>) -> Result<(), String> {
    if d.get(..4) != Some(b"\x7fELF") {
        return Err("no ELF magic".into());
    }
    if d.get(4) != Some(&2) || d.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF".into());
    }
    let short = || "the ELF header is cut short".to_string();
    let m = u16_at(d, 18).ok_or_else(short)?;
    if let Some(want) = machine {
        if m != want {
            return Err(format!("ELF machine {m}, expected {want} (CUDA)"));
        }
    }
    let shoff = u64_at(d, 0x28).ok_or_else(short)?;
    let shentsize = u16_at(d, 0x3a).ok_or_else(short)? as u64;
    let shnum = u16_at(d, 0x3c).ok_or_else(short)? as u64;
    if shnum == 0 {
        return Ok(());
    }
    if shentsize < 64 {
        return Err(format!("section header size {shentsize}"));
    }
    let len = d.len() as u64;
    let table_end = shnum
        .checked_mul(shentsize)
        .and_then(|n| n.checked_add(shoff))
        .filter(|&e| e <= len)
        .ok_or("the section table lies past the end of the file")?;
    let _ = table_end;
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        let ty = u32_at(d, h + 4).ok_or_else(short)?;
        let off = u64_at(d, h + 0x18).ok_or_else(short)?;
        let size = u64_at(d, h + 0x20).ok_or_else(short)?;
        const SHT_NOBITS: u32 = 8;
        if ty != SHT_NOBITS && off.checked_add(size).is_none_or(|e| e > len) {
            return Err(format!("section {i} lies past the end of the file"));
        }
    }
    Ok(())
}

/// The fatbin header, its payload size, and every entry inside the payload.
pub(crate) fn fatbin(d: &[u8]) -> Result<(), String> {
    if u32_at(d, 0) != Some(FATBIN_MAGIC) {
        return Err("no fatbin magic".into());
    }
    let header = u16_at(d, 6).ok_or("the header is cut short")? as u64;
    let size = u64_at(d, 8).ok_or("the header is cut short")?;
    let end = header
        .checked_add(size)
        .filter(|&e| e <= d.len() as u64)
        .ok_or_else(|| format!("the header announces {header} + {size} bytes"))?;
    if header < 16 || size == 0 {
        return Err("the header announces no entries".into());
    }
    let mut off = header;
    while off < end {
        let o = off as usize;
        let eh = u32_at(d, o + 4).ok_or("an entry header is cut short")? as u64;
        let psize = u64_at(d, o + 8).ok_or("an entry header is cut short")?;
        if eh < 16 {
            return Err(format!("the entry at {off:#x} has header size {eh}"));
        }
        off = off
            .checked_add(eh)
            .and_then(|x| x.checked_add(psize))
            .filter(|&e| e <= end)
            .ok_or_else(|| format!("the entry at {off:#x} runs past the end"))?;
    }
    Ok(())
}

/// An `ar` archive: the magic and every member's header and size, to the end.
pub(crate) fn archive(d: &[u8]) -> Result<usize, String> {
    if !d.starts_with(b"!<arch>\n") {
        return Err("no archive magic".into());
    }
    let mut off = 8usize;
    let mut members = 0;
    while off < d.len() {
        let h = d.get(off..off + 60).ok_or("a member header is cut short")?;
        if &h[58..60] != b"`\n" {
            return Err(format!("bad member header at {off}"));
        }
        let size: usize = std::str::from_utf8(&h[48..58])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("bad member size at {off}"))?;
        let next = (off + 60)
            .checked_add(size)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| format!("the member at {off} runs past the end"))?;
        off = next + (next & 1);
        members += 1;
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_checks() {
        let good =
            "//\n.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
        assert!(ptx(good.as_bytes()).is_ok());
        assert!(ptx(&good.as_bytes()[..good.len() - 3])
            .unwrap_err()
            .contains("cut short"));
        assert!(ptx(b"//\n// Generated by NVIDIA NVVM Compiler\n")
            .unwrap_err()
            .contains(".version"));
        assert!(ptx(b".version 9.0\n").unwrap_err().contains(".target"));
    }

    #[test]
    fn fatbin_checks() {
        let mut f = Vec::new();
        f.extend(FATBIN_MAGIC.to_le_bytes());
        f.extend(1u16.to_le_bytes());
        f.extend(16u16.to_le_bytes());
        f.extend(24u64.to_le_bytes());
        // One entry: kind, version, header size 16, payload 8.
        f.extend(2u16.to_le_bytes());
        f.extend(1u16.to_le_bytes());
        f.extend(16u32.to_le_bytes());
        f.extend(8u64.to_le_bytes());
        f.extend([0u8; 8]);
        assert!(fatbin(&f).is_ok());
        assert!(fatbin(&f[..30]).is_err());
        assert!(fatbin(&f[..10]).is_err());
        assert!(fatbin(b"garbage garbage garbage").is_err());
        // A huge announced size is an error, not an overflow.
        let mut huge = f.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(fatbin(&huge).is_err());
    }

    #[test]
    fn elf_and_archive_checks() {
        assert!(elf(b"\x7fELF", None).is_err());
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        assert!(elf(&h, Some(EM_CUDA)).is_ok());
        assert!(elf(&h, Some(62)).is_err());
        h[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        h[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        h[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        assert!(elf(&h, None).unwrap_err().contains("past the end"));
        let mut a = b"!<arch>\n".to_vec();
        a.extend(
            format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                "a.o/", 0, 0, 0, 644, 3
            )
            .bytes(),
        );
        a.extend(b"abc\n");
        assert_eq!(archive(&a), Ok(1));
        assert!(archive(&a[..a.len() - 3]).is_err());
        assert!(archive(b"!<arch>\nshort").is_err());
    }
}
