//! Parsing the Make-style dependency file nvcc writes with `-MD -MF`.

use std::path::PathBuf;

/// The prerequisites listed in a depfile (every target's), in order, deduplicated.
///
/// Handles line continuations (`\` at line end) and escaped spaces (`\ `).
pub(crate) fn parse(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out: Vec<PathBuf> = Vec::new();
    for line in joined.lines() {
        // `target: prereq…`; the target ends at the first `: ` (or `:` at end).
        let Some(colon) = find_target_colon(line) else {
            continue;
        };
        for tok in tokens(&line[colon + 1..]) {
            let p = PathBuf::from(tok);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn find_target_colon(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    (0..b.len()).find(|&i| b[i] == b':' && (i + 1 == b.len() || b[i + 1].is_ascii_whitespace()))
}

fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            '$' if chars.peek() == Some(&'$') => {
                cur.push('$');
                chars.next();
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_and_escapes() {
        let d = "out/a.ptx : a.cu \\\n    /usr/include/x.h \\\n    my\\ dir/h.cuh\n";
        let deps = parse(d);
        assert_eq!(
            deps,
            [
                PathBuf::from("a.cu"),
                PathBuf::from("/usr/include/x.h"),
                PathBuf::from("my dir/h.cuh")
            ]
        );
    }

    #[test]
    fn phony_targets_do_not_duplicate() {
        let d = "a.o: a.cu h.cuh\nh.cuh:\n";
        assert_eq!(parse(d), [PathBuf::from("a.cu"), PathBuf::from("h.cuh")]);
    }
}
