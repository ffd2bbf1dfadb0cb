//! The libraries' table of flags ([`kicklab_model::Flag`]) against the
//! flags the binary takes: the same set of names, so that a command a
//! library prints cannot name a flag that is gone, and a new flag cannot
//! be missing from the table.

use std::collections::BTreeSet;

use kicklab_model::{Flag, Param};

use crate::kicklab;

const SUBCOMMANDS: [&str; 16] = [
    "model",
    "sim",
    "sweep",
    "calibrate",
    "run",
    "validate",
    "pingpong",
    "control",
    "advise",
    "qos",
    "scale",
    "flags",
    "map",
    "report",
    "trace",
    "replay",
];

/// Every long flag and alias in `kicklab SUB --help`, over all
/// subcommands.
fn flags_in_help() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for sub in SUBCOMMANDS {
        let out = kicklab(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help failed");
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines() {
            let t = line.trim_start();
            let t = t.strip_prefix("-h, ").unwrap_or(t);
            if let Some(rest) = t.strip_prefix("--") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                names.insert(name);
            }
            for tag in ["[alias: ", "[aliases: "] {
                if let Some(i) = line.find(tag) {
                    let list = &line[i + tag.len()..];
                    let list = &list[..list.find(']').unwrap_or(list.len())];
                    for a in list.split(", ") {
                        if let Some(a) = a.trim().strip_prefix("--") {
                            names.insert(a.to_string());
                        }
                    }
                }
            }
        }
    }
    names
}

#[test]
fn the_flag_table_and_the_binary_name_the_same_flags() {
    let table: BTreeSet<String> = Flag::OTHERS
        .iter()
        .map(|f| f.name().to_string())
        .chain(Param::ALL.map(|p| p.name().to_string()))
        .collect();
    let binary = flags_in_help();
    // `--version` is the top level's alone, and clap's own; `validate
    // --replay` is read before clap parses (it is `replay`).
    let binary: BTreeSet<String> = binary
        .into_iter()
        .filter(|n| n != "version")
        .chain(["replay".to_string()])
        .collect();
    let missing: Vec<&String> = binary.difference(&table).collect();
    let stale: Vec<&String> = table.difference(&binary).collect();
    assert!(
        missing.is_empty(),
        "flags the binary takes but kicklab_model::Flag lacks: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "kicklab_model::Flag names flags the binary does not take: {stale:?}"
    );
}

/// Lines of library code that spell another tool's flag that happens to
/// share a kicklab flag's name, with the file they are in.
const OTHER_TOOLS: &[(&str, &str)] = &[
    // The kernel's netlink client, in the advice's commands.
    ("crates/lab/src/knobs.rs", "ynl --do napi-set --json"),
];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The library crates' code (their `src`, unit-test modules and comments
/// left out) spells no kicklab flag: each comes from the table
/// (`Flag`, `CommandLine`), so that renaming a flag cannot leave a stale
/// one in a message or a printed command. Tests spell what they expect
/// on purpose, and the binary owns its flags.
#[test]
fn the_libraries_spell_no_flag_of_their_own() {
    let names: BTreeSet<String> = Flag::OTHERS
        .iter()
        .map(|f| f.name().to_string())
        .chain(Param::ALL.map(|p| p.name().to_string()))
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let krate = entry.unwrap().path();
        if krate.file_name().is_some_and(|n| n != "cli") && krate.join("src").is_dir() {
            rust_files(&krate.join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} library files", files.len());
    let mut spelled = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if t == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.starts_with("mod tests")) {
                break;
            }
            if t.starts_with("//")
                || OTHER_TOOLS
                    .iter()
                    .any(|(f, l)| shown.ends_with(f) && line.contains(l))
            {
                continue;
            }
            let bytes = line.as_bytes();
            for (at, _) in line.match_indices("--") {
                let before = at.checked_sub(1).map(|b| bytes[b]);
                if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    continue;
                }
                let name: String = line[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                if names.contains(name.trim_end_matches('-')) {
                    spelled.push(format!("{shown}:{}: --{name}", i + 1));
                }
            }
        }
    }
    assert!(
        spelled.is_empty(),
        "library code spells flags (use kicklab_model::Flag or CommandLine):\n{}",
        spelled.join("\n")
    );
}
