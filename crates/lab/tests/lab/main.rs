//! The lab's integration tests, one binary (each is linked whole: one
//! link instead of four): the controller's targets in the simulator
//! (`control`), recorded control studies replayed (`control_replay`), the
//! several-VM targets in the model and the simulator (`qos`), and recorded
//! validations replayed (`replay`). Nothing here times anything.

mod control;
mod control_replay;
mod qos;
mod replay;

/// An edit of a recorded JSON file.
type Edit = fn(&mut serde_json::Value);

/// Each edit of `set/file`, written into a folder of its own beside the
/// set's `profile`, must be refused by `replay` in one short message that
/// names the file and holds the case's needle.
fn each_edit_is_refused<T: std::fmt::Debug, E: std::fmt::Display>(
    set: &std::path::Path,
    file: &str,
    profile: &str,
    cases: &[(Edit, &str)],
    replay: impl Fn(&std::path::Path) -> Result<T, E>,
) {
    let dir = std::env::temp_dir().join(format!("kicklab-{file}-odd-{}", std::process::id()));
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(set.join(file)).unwrap()).unwrap();
    for (edit, needle) in cases {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(set.join(profile), dir.join(profile)).unwrap();
        let mut v = recorded.clone();
        edit(&mut v);
        std::fs::write(dir.join(file), v.to_string()).unwrap();
        let e = replay(&dir).unwrap_err().to_string();
        assert!(e.contains(file) && e.contains(needle), "{needle}: {e}");
        assert!(!e.contains("--"), "names no flag: {e}");
        assert!(e.len() < 400, "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
