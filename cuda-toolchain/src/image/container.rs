//! Whether the file around the images is whole: an `ar` archive (`.a`,
//! `.rlib`) or a host ELF file (binary, object, shared library) whose own
//! headers claim more bytes than the file has was cut short (a failed copy
//! or download, a full disk). The kernel images it held may be gone with
//! the missing bytes, so "no image found" must not be the answer.
//!
//! `ar` layout (POSIX `ar.h`, GNU and BSD alike): the 8-byte magic
//! `!<arch>\n`, then per member a 60-byte header whose bytes 48..58 are the
//! decimal size of its data and 58..60 are `` `\n ``, then the data, padded
//! to an even offset.

use super::elf::{self, Elf, EM_CUDA};

const AR_MAGIC: &[u8] = b"!<arch>\n";
const AR_HEADER: usize = 60;

/// Why the container in `data` is not whole, or `None` when it is (or is
/// neither an `ar` archive nor a host ELF file). A cubin is checked by the
/// cubin reader itself.
pub(crate) fn damage(data: &[u8]) -> Option<String> {
    if data.starts_with(AR_MAGIC) {
        return archive_damage(data);
    }
    if elf::is_elf64_le(data) && elf::machine(data) != Some(EM_CUDA) {
        return match Elf::parse(data) {
            Err(e) => Some(format!("the ELF file is cut short or corrupt: {e}")),
            Ok(f) if f.claimed_len() > data.len() => Some(format!(
                "the ELF file is cut short: its headers claim {} bytes, the file has {}",
                f.claimed_len(),
                data.len()
            )),
            Ok(_) => None,
        };
    }
    if data.starts_with(b"\x7fELF") && data.len() < 64 {
        return Some(format!(
            "the ELF file is cut short: {} bytes, less than its 64-byte header",
            data.len()
        ));
    }
    None
}

fn archive_damage(data: &[u8]) -> Option<String> {
    let mut at = AR_MAGIC.len();
    // GNU's `//` member: the names too long for a header (`/123` points in).
    let mut long_names: &[u8] = &[];
    while at < data.len() {
        let Some(header) = data.get(at..at + AR_HEADER) else {
            return Some(format!(
                "the archive is cut short: the member header at offset {at:#x} has {} of its {AR_HEADER} bytes",
                data.len() - at
            ));
        };
        let size = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok());
        let (Some(size), b"`\n") = (size, &header[58..60]) else {
            return Some(format!(
                "the archive is corrupt: the member header at offset {at:#x} is not an `ar` header"
            ));
        };
        let start = at + AR_HEADER;
        let body = &data[start..];
        let raw = String::from_utf8_lossy(&header[..16])
            .trim_end()
            .to_string();
        if size > body.len() {
            return Some(format!(
                "the archive is cut short: {} at offset {at:#x} declares {size} bytes, {} remain",
                member_name(&raw, long_names, body),
                body.len()
            ));
        }
        if raw == "//" {
            long_names = &body[..size];
        }
        // Data is padded to an even offset; a last odd member may lack the pad.
        at = start + size + (size % 2);
    }
    None
}

/// A member's name in words, from its header field (GNU `name/`, `/123`
/// into the long-name table, `/` and `//` for the tables; BSD `#1/N`, the
/// name being the first N bytes of the data).
fn member_name(raw: &str, long_names: &[u8], body: &[u8]) -> String {
    let named = |n: &[u8]| format!("member `{}`", String::from_utf8_lossy(n));
    match raw {
        "/" | "/SYM64/" => "the symbol table".to_string(),
        "//" => "the long-name table".to_string(),
        _ => {
            if let Some(n) = raw
                .strip_prefix("#1/")
                .and_then(|n| n.parse::<usize>().ok())
            {
                return body.get(..n).map_or("a member".to_string(), |b| {
                    named(b.split(|&c| c == 0).next().unwrap_or(b))
                });
            }
            if let Some(off) = raw.strip_prefix('/').and_then(|n| n.parse::<usize>().ok()) {
                return long_names
                    .get(off..)
                    .and_then(|rest| rest.split(|&c| c == b'\n').next())
                    .map_or("a member".to_string(), |n| {
                        named(n.strip_suffix(b"/").unwrap_or(n))
                    });
            }
            named(raw.strip_suffix('/').unwrap_or(raw).as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, data: &[u8]) -> Vec<u8> {
        let mut m = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            644,
            data.len()
        )
        .into_bytes();
        m.extend_from_slice(data);
        if data.len() % 2 == 1 {
            m.push(b'\n');
        }
        m
    }

    #[test]
    fn whole_archives_pass_and_every_cut_inside_a_member_is_named() {
        let mut a = AR_MAGIC.to_vec();
        a.extend(member("a.o/", b"hello"));
        let first_end = a.len();
        a.extend(member("b.o/", &[7u8; 301]));
        assert_eq!(damage(&a), None);
        // Without the last pad byte, as some tools write it.
        assert_eq!(damage(&a[..a.len() - 1]), None);
        for n in AR_MAGIC.len() + 1..a.len() - 1 {
            if n == first_end || n == first_end - 1 {
                continue; // a cut between members (or in a pad) leaves a whole, shorter archive
            }
            let why = damage(&a[..n]).unwrap_or_else(|| panic!("cut at {n} not seen"));
            assert!(why.contains("cut short"), "{n}: {why}");
        }
        let cut = damage(&a[..first_end + AR_HEADER + 10]).unwrap();
        assert!(
            cut.contains("member `b.o`") && cut.contains("301 bytes, 10 remain"),
            "{cut}"
        );
        // GNU's symbol table and long names, as `ar` and nvcc -lib write them.
        let mut g = AR_MAGIC.to_vec();
        g.extend(member("/", &[0u8; 8]));
        g.extend(member("//", b"a_rather_long_object_name.o/\n"));
        let named_at = g.len();
        g.extend(member("/0", &[1u8; 40]));
        assert_eq!(damage(&g), None);
        let cut = damage(&g[..named_at + AR_HEADER + 4]).unwrap();
        assert!(
            cut.contains("member `a_rather_long_object_name.o`"),
            "{cut}"
        );
        assert!(damage(&g[..AR_MAGIC.len() + AR_HEADER + 2])
            .unwrap()
            .contains("the symbol table"));
    }

    #[test]
    fn a_broken_header_is_corrupt_and_other_files_are_not_judged() {
        let mut a = AR_MAGIC.to_vec();
        a.extend(member("a.o/", b"hi"));
        a[AR_MAGIC.len() + 58] = b'x';
        assert!(damage(&a).unwrap().contains("corrupt"));
        assert_eq!(damage(b"plain text"), None);
        assert_eq!(damage(b""), None);
        assert!(damage(b"\x7fELF\x02\x01").unwrap().contains("cut short"));
    }

    #[test]
    fn a_cut_host_elf_is_damaged() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(damage(&exe), None);
        for n in [64, exe.len() / 2, exe.len() - 1] {
            assert!(damage(&exe[..n]).is_some(), "cut at {n}");
        }
    }
}
