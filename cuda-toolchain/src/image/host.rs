//! The host side of a build's output (feature `host-symbols`): the symbols
//! an object file or a static library (`ar` archive) defines and needs, read
//! with the `object` crate, and the traces some flags leave in host code
//! (absolute relocations without `-fPIC`, one section per function, DWARF,
//! relocatable device code). `compare.rs` explains the differences.

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, SectionKind};

use super::HostCode;

/// The host code in `data`: an `ar` archive's ELF members, or one ELF
/// object, executable or shared library; `Ok(None)` for anything else
/// (PTX, a cubin, a fatbin).
pub fn host_code(data: &[u8]) -> Result<Option<HostCode>, String> {
    let mut code = HostCode::default();
    if data.starts_with(b"!<arch>\n") {
        let archive =
            ArchiveFile::parse(data).map_err(|e| format!("not a readable archive: {e}"))?;
        for member in archive.members() {
            let member = member.map_err(|e| format!("archive member: {e}"))?;
            let name = String::from_utf8_lossy(member.name()).into_owned();
            let bytes = member
                .data(data)
                .map_err(|e| format!("archive member `{name}`: {e}"))?;
            // Members that are not host ELF objects (a symbol table, a cubin) are skipped.
            if is_host_elf(bytes) {
                add_object(&mut code, &name, bytes)?;
            }
        }
        return Ok(Some(code));
    }
    if is_host_elf(data) {
        add_object(&mut code, "", data)?;
        return Ok(Some(code));
    }
    Ok(None)
}

/// An ELF file for a CPU (a cubin is ELF too, for EM_CUDA).
fn is_host_elf(d: &[u8]) -> bool {
    d.starts_with(b"\x7fELF") && super::elf::machine(d) != Some(190)
}

fn add_object(code: &mut HostCode, member: &str, bytes: &[u8]) -> Result<(), String> {
    let file = object::File::parse(bytes).map_err(|e| format!("`{member}`: {e}"))?;
    code.objects += 1;
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() || sym.is_local() {
            continue;
        }
        if sym.is_undefined() {
            code.undefined.insert(name.to_string());
        } else if sym.is_global() || sym.is_weak() {
            code.defined.insert(name.to_string());
        }
    }
    let mut text_sections = 0;
    let mut absolute = false;
    for section in file.sections() {
        let name = section.name().unwrap_or("");
        if name == ".nv_fatbin" || name == "__nv_relfatbin" {
            code.relocatable_device_code |= name == "__nv_relfatbin";
        }
        if name.starts_with(".debug_info") {
            code.debug_info = true;
        }
        if section.kind() == SectionKind::Text {
            code.text_size += section.size();
            text_sections += 1;
            // R_X86_64_32 / 32S (10, 11): absolute addresses, which position-independent code never has.
            absolute |= section.relocations().any(|(_, r)| {
                matches!(r.flags(), RelocationFlags::Elf { r_type } if r_type == object::elf::R_X86_64_32 || r_type == object::elf::R_X86_64_32S)
            }) && file.architecture() == object::Architecture::X86_64;
        }
    }
    if text_sections > 3
        && file
            .sections()
            .any(|s| s.name().is_ok_and(|n| n.starts_with(".text.")))
    {
        code.function_sections = true;
    }
    if absolute {
        code.non_pic.push(if member.is_empty() {
            "(the object)".into()
        } else {
            member.into()
        });
    }
    if code
        .undefined
        .iter()
        .any(|s| s.starts_with("__cudaRegisterLinkedBinary"))
    {
        code.relocatable_device_code = true;
    }
    Ok(())
}
