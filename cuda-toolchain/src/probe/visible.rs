//! `CUDA_VISIBLE_DEVICES`, read the way the driver reads it (shared by the
//! probe and by programs that must explain an empty or invalid value).
//!
//! The driver applies the variable itself when it is loaded in a process, so
//! the driver-API probe only needs it passed on. nvidia-smi ignores it, so the
//! nvidia-smi fallback applies it here: a comma-separated list of indices or
//! GPU-UUID prefixes (`GPU-8f3a...`); the listed devices are renumbered 0, 1, ...
//! in list order; the list stops at the first entry that names no device
//! (documented driver behaviour: only the devices before an invalid entry are
//! visible); an empty value hides every GPU.

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A device index as nvidia-smi numbers it.
    Index(u32),
    /// A prefix of a GPU UUID, including `GPU-`, lower-cased.
    Uuid(String),
    /// A MIG instance UUID (`MIG-...`), lower-cased.
    Mig(String),
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Index(i) => write!(f, "{i}"),
            Entry::Uuid(u) | Entry::Mig(u) => f.write_str(u),
        }
    }
}

/// The parsed variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visible {
    /// Entries up to (not including) the first malformed one.
    pub entries: Vec<Entry>,
    /// Why the list was cut short, naming the entry, if it was.
    pub problem: Option<String>,
}

/// Parses a `CUDA_VISIBLE_DEVICES` value. Never fails: oddities become `problem`.
///
/// ```
/// use cuda_toolchain::probe::visible::{parse, Entry};
/// let v = parse("1,GPU-8F3A,x,0");
/// assert_eq!(v.entries, vec![Entry::Index(1), Entry::Uuid("gpu-8f3a".into())]);
/// assert!(v.problem.unwrap().contains("`x`"));
/// ```
pub fn parse(value: &str) -> Visible {
    let mut entries = Vec::new();
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Visible {
            entries,
            problem: None,
        };
    }
    for raw in trimmed.split(',') {
        let item = raw.trim();
        let digits: String = item.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && digits.len() == item.len() {
            match digits.parse::<u32>() {
                Ok(i) => entries.push(Entry::Index(i)),
                Err(_) => return cut(entries, item, "the index is too large"),
            }
        } else if item.len() > 4 && has_prefix(item, "GPU-") {
            entries.push(Entry::Uuid(item.to_ascii_lowercase()));
        } else if item.len() > 4 && has_prefix(item, "MIG-") {
            entries.push(Entry::Mig(item.to_ascii_lowercase()));
        } else {
            return cut(
                entries,
                item,
                "expected a device index such as `0` or a GPU UUID prefix such as `GPU-8f3a`",
            );
        }
    }
    Visible {
        entries,
        problem: None,
    }
}

fn has_prefix(item: &str, prefix: &str) -> bool {
    // `get` rather than slicing: the value may hold multi-byte characters.
    item.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

fn cut(entries: Vec<Entry>, item: &str, why: &str) -> Visible {
    Visible {
        entries,
        problem: Some(format!(
            "CUDA_VISIBLE_DEVICES entry `{item}` is not usable ({why}); the driver shows only the devices listed before it"
        )),
    }
}

/// Selects the visible devices among `all` (each with its nvidia-smi index and
/// UUID), in list order. Returns the chosen positions in `all` and any problem.
pub fn select(value: &str, all: &[(u32, Option<String>)]) -> (Vec<usize>, Option<String>) {
    let parsed = parse(value);
    let mut chosen: Vec<usize> = Vec::new();
    for entry in &parsed.entries {
        let found = match entry {
            Entry::Index(i) => all.iter().position(|(idx, _)| idx == i),
            Entry::Uuid(prefix) => {
                let matches: Vec<usize> = all
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, uuid))| {
                        uuid.as_deref()
                            .is_some_and(|u| u.to_ascii_lowercase().starts_with(prefix.as_str()))
                    })
                    .map(|(pos, _)| pos)
                    .collect();
                if matches.len() > 1 {
                                        return (
                        chosen,
                        Some(format!(
                            "CUDA_VISIBLE_DEVICES entry `{entry}` matches {} GPUs; give more of the UUID",
                            matches.len()
                        )),
                    );
                }
                matches.first().copied()
            }
            Entry::Mig(_) => {
                return (
                    chosen,
                    Some(format!(
                        "CUDA_VISIBLE_DEVICES entry `{entry}` is a MIG instance, which cannot be matched against nvidia-smi's GPU list; only the devices listed before it are shown here"
                    )),
                )
            }
        };
        match found {
            Some(pos) if chosen.contains(&pos) => {
                return (
                    chosen,
                    Some(format!(
                        "CUDA_VISIBLE_DEVICES lists `{}` twice; the driver shows only the devices listed before the repeat",
                        entry
                    )),
                )
            }
            Some(pos) => chosen.push(pos),
            None => {
                return (
                    chosen,
                    Some(format!(
                        "CUDA_VISIBLE_DEVICES entry `{}` names no GPU on this machine ({} found); the driver shows only the devices listed before it",
                        entry,
                        all.len()
                    )),
                )
            }
        }
    }
    (chosen, parsed.problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<(u32, Option<String>)> {
        vec![
            (0, Some("GPU-aaaa1111-0000".into())),
            (1, Some("GPU-bbbb2222-0000".into())),
            (2, Some("GPU-bbbb3333-0000".into())),
        ]
    }

    #[test]
    fn indices_are_renumbered_in_list_order() {
        assert_eq!(select("2,0", &gpus()), (vec![2, 0], None));
        assert_eq!(select(" 1 ", &gpus()), (vec![1], None));
    }

    #[test]
    fn empty_hides_everything() {
        assert_eq!(select("", &gpus()), (vec![], None));
        assert_eq!(select("  ", &gpus()), (vec![], None));
    }

    #[test]
    fn uuid_prefixes_match_case_insensitively() {
        assert_eq!(select("GPU-BBBB3", &gpus()), (vec![2], None));
        let (chosen, problem) = select("GPU-bbbb", &gpus());
        assert!(chosen.is_empty());
        assert!(problem.unwrap().contains("matches 2 GPUs"));
    }

    #[test]
    fn list_stops_at_the_first_invalid_entry() {
        let (chosen, problem) = select("0,7,1", &gpus());
        assert_eq!(chosen, vec![0]);
        assert!(problem.unwrap().contains("`7` names no GPU"));
        let (chosen, problem) = select("1,-1,0", &gpus());
        assert_eq!(chosen, vec![1]);
        assert!(problem.unwrap().contains("`-1` is not usable"));
        let (chosen, problem) = select("0,0", &gpus());
        assert_eq!(chosen, vec![0]);
        assert!(problem.unwrap().contains("twice"));
    }

    #[test]
    fn mig_instances_parse_but_cannot_be_matched_to_nvidia_smi_rows() {
        let v = parse("MIG-4f1c2d,0");
        assert_eq!(
            v.entries,
            vec![Entry::Mig("mig-4f1c2d".into()), Entry::Index(0)]
        );
        assert_eq!(v.problem, None);
        let (chosen, problem) = select("1,MIG-4f1c2d,0", &gpus());
        assert_eq!(chosen, vec![1]);
        assert!(problem.unwrap().contains("`mig-4f1c2d` is a MIG instance"));
    }

    #[test]
    fn garbage_and_unicode_do_not_panic() {
        for v in [
            "ü",
            "GPU-",
            "MIG-GPU-x/1/0",
            "99999999999999999999",
            ",",
            "0,,1",
            "🙂,0",
            "aüü",
            "aüüGPU-",
        ] {
            let _ = select(v, &gpus());
        }
        assert!(parse("abc").problem.unwrap().contains("`abc`"));
    }
}
