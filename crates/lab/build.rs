//! Builds the report explorer's WebAssembly module: `kicklab-wasm` for
//! `wasm32-unknown-unknown` (profile `wasm`: size-optimized, no unwinding)
//! by a nested `cargo build`, into `target/wasm` (shared by every build of
//! the workspace; `KICKLAB_WASM_TARGET_DIR` moves it). The module lands in
//! `$OUT_DIR/explorer.wasm` for `include_bytes!`.
//!
//! Where it cannot be built (the target is not installed, or
//! `KICKLAB_NO_WASM` is set), the build still succeeds: the module is
//! empty and `$OUT_DIR/explorer-why.txt` says why, which the report's
//! explorer section shows with what to do.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../..");
    for p in [
        "crates/wasm",
        "crates/model/src",
        "crates/sim/src",
        "crates/report/src",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KICKLAB_NO_WASM");
    println!("cargo:rerun-if-env-changed=KICKLAB_WASM_TARGET_DIR");
    let (wasm, why) = match build(&root) {
        Ok(bytes) => (bytes, String::new()),
        Err(why) => {
            println!("cargo:warning=report explorer: {why}");
            (Vec::new(), why)
        }
    };
    fs::write(out.join("explorer.wasm"), wasm).expect("write explorer.wasm");
    fs::write(out.join("explorer-why.txt"), why).expect("write explorer-why.txt");
}

fn build(root: &Path) -> Result<Vec<u8>, String> {
    if env::var("TARGET").is_ok_and(|t| t.starts_with("wasm32")) {
        return Err("kicklab-lab is itself being built for wasm32".into());
    }
    if env::var_os("KICKLAB_NO_WASM").is_some() {
        return Err("KICKLAB_NO_WASM was set when kicklab was built".into());
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let libdir = PathBuf::from(String::from_utf8_lossy(&libdir.stdout).trim());
    // A target installed after this build runs the script again (a path
    // that does not exist yet reruns it on every build, which costs one
    // `rustc --print`).
    println!("cargo:rerun-if-changed={}", libdir.display());
    let installed = fs::read_dir(&libdir).is_ok_and(|mut d| {
        d.any(|e| {
            e.is_ok_and(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("libcore-") && name.ends_with(".rlib")
            })
        })
    });
    if !installed {
        return Err(format!(
            "the Rust target {TARGET} is not installed (rustup target add {TARGET}, then build kicklab again)"
        ));
    }
    let target_dir = env::var_os("KICKLAB_WASM_TARGET_DIR")
        .map_or_else(|| root.join("target/wasm"), PathBuf::from);
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--locked",
        "--profile",
        "wasm",
        "-p",
        "kicklab-wasm",
    ])
    .args(["--target", TARGET])
    .arg("--manifest-path")
    .arg(root.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir);
    // What the outer build set for itself, not for this one: clippy's
    // wrapper, its flags (`RUSTFLAGS`), its target.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
    ] {
        cmd.env_remove(var);
    }
    let run = cmd
        .output()
        .map_err(|e| format!("cannot run cargo for {TARGET}: {e}"))?;
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "the {TARGET} build of kicklab-wasm failed: {}",
            tail.join(" | ")
        ));
    }
    let wasm = target_dir
        .join(TARGET)
        .join("wasm")
        .join("kicklab_wasm.wasm");
    fs::read(&wasm).map_err(|e| format!("{}: {e}", wasm.display()))
}
