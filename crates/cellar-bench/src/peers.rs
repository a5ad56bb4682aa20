//! `cellar-bench peers setup|status|self-test`: what the peers of the published benchmarks need,
//! whether it is here, and installing it on a fresh machine of this kind (Debian 12).
//!
//! Every peer is optional. Rust engines are compiled in by cargo features (rocksdb compiles
//! RocksDB from source, which needs clang and libclang for its bindings; see
//! docs/benchmarks.md); the Java peers (java.rs) need a JDK, Maven
//! and one `mvn package` of bench/java, which downloads their jars from Maven Central the
//! first time.

// Unsafe code here: `geteuid(2)` through libc.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, Subcommand};

use crate::engines;
use crate::error::{BenchError, Result};
use crate::java::{self, JavaPeer};
use crate::peer_keys;

/// Rust engines a branch may add to the registry; listed with whether this build has them.
const RUST_ENGINES: &[&str] = &[
    "cellar", "rocksdb", "lmdb", "fjall", "sqlite", "redb", "sled",
];
/// What the `rocksdb` feature's build needs (`librocksdb-sys` compiles RocksDB's C++ with
/// the system compiler and generates its bindings with libclang at build time), and fio,
/// which `dfsio --fio` and `report --fio` run for the disk's ceilings.
const APT_PACKAGES: &[&str] = &["clang", "libclang-dev", "fio"];
/// Where Debian's libclang-dev puts the library bindgen loads (`llvm-<version>`).
const LLVM_ROOT: &str = "/usr/lib";
/// How long the first `--features rocksdb` build takes here (RocksDB's C++ on 2 cores);
/// later builds reuse it.
const ROCKSDB_FIRST_BUILD: &str = "about 18 minutes on 2 cores";

#[derive(Debug, Subcommand)]
pub enum PeersCommand {
    /// Check java and mvn, build the Java peers (`mvn -q -f bench/java/pom.xml package`),
    /// optionally install Debian packages (--apt), then print the status.
    Setup(SetupArgs),
    /// List each peer and whether its toolchain (and build) is present.
    Status(JavaDirArg),
    /// Run each built Java peer's --self-test and compare it with the shared key/sample
    /// vector (bench/java/vector.txt); peers not built are reported as skipped.
    SelfTest(JavaDirArg),
}

#[derive(Debug, Clone, Args)]
pub struct JavaDirArg {
    /// The bench/java folder [default: $CELLAR_BENCH_JAVA_DIR, else the source tree's]
    #[arg(long, value_name = "DIR")]
    pub java_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// Also `apt-get install -y clang libclang-dev fio` (root only): what building the
    /// `rocksdb` feature and measuring the disk's ceilings need
    #[arg(long)]
    pub apt: bool,
    #[command(flatten)]
    pub dir: JavaDirArg,
}

impl JavaDirArg {
    fn resolve(&self) -> PathBuf {
        self.java_dir.clone().unwrap_or_else(java::default_java_dir)
    }
}

pub fn run(cmd: &PeersCommand) -> Result<()> {
    match cmd {
        PeersCommand::Setup(a) => setup(a),
        PeersCommand::Status(d) => {
            print!("{}", status(&d.resolve()));
            Ok(())
        }
        PeersCommand::SelfTest(d) => self_test(&d.resolve()),
    }
}

fn run_checked(cmd: &mut Command, what: &str) -> Result<()> {
    eprintln!("[peers] {what}");
    let status = cmd
        .status()
        .map_err(|e| BenchError::io(format!("{cmd:?}"), e))?;
    if status.success() {
        Ok(())
    } else {
        Err(BenchError::Invalid(format!("{what}: failed ({status})")))
    }
}

fn setup(a: &SetupArgs) -> Result<()> {
    let java_dir = a.dir.resolve();
    let mut failures = Vec::new();
    if a.apt {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(BenchError::Invalid("--apt needs root".into()));
        }
        let r = run_checked(
            Command::new("apt-get").arg("update").arg("-q"),
            "apt-get update",
        )
        .and_then(|()| {
            run_checked(
                Command::new("apt-get")
                    .args(["install", "-y", "-q"])
                    .args(APT_PACKAGES)
                    .env("DEBIAN_FRONTEND", "noninteractive"),
                &format!("apt-get install -y {}", APT_PACKAGES.join(" ")),
            )
        });
        if let Err(e) = r {
            eprintln!("[peers] {e}");
            failures.push(e.to_string());
        }
    }
    let java = java::find_tool("java");
    let mvn = java::find_tool("mvn");
    match (&java, &mvn) {
        (Some(_), Some(mvn)) => {
            let pom = java_dir.join("pom.xml");
            let r = run_checked(
                Command::new(mvn)
                    .args(["-B", "-q", "-f"])
                    .arg(&pom)
                    .arg("package"),
                &format!(
                    "mvn -q -f {} package (the first run downloads ~220 MB from Maven Central)",
                    pom.display()
                ),
            );
            if let Err(e) = r {
                eprintln!("[peers] {e}");
                failures.push(e.to_string());
            }
        }
        _ => {
            let why = format!(
                "Java peers not built: {}{}(Debian: apt-get install -y openjdk-17-jdk-headless maven)",
                if java.is_none() { "no java; " } else { "" },
                if mvn.is_none() { "no mvn; " } else { "" },
            );
            eprintln!("[peers] {why}");
            failures.push(why);
        }
    }
    print!("{}", status(&java_dir));
    println!(
        "RocksDB: `cargo build --release -p cellar-bench --features rocksdb` compiles RocksDB \
         from source the first time ({ROCKSDB_FIRST_BUILD}); it needs clang and libclang-dev \
         (`cellar-bench peers setup --apt`)."
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(BenchError::Invalid(format!(
            "peers setup incomplete: {}",
            failures.join("; ")
        )))
    }
}

fn yes_no(present: bool) -> &'static str {
    if present {
        "yes"
    } else {
        "no"
    }
}

/// One line per peer: name, available to `cellar-bench` now, and what it rests on.
pub fn status(java_dir: &Path) -> String {
    let mut s = String::from("| peer | available | toolchain |\n|---|---|---|\n");
    for &name in RUST_ENGINES {
        let (ok, how) = match engines::check_available(name) {
            Ok(()) if name == "cellar" => (true, "built in".to_string()),
            Ok(()) => (true, format!("compiled in (cargo feature {name})")),
            Err(BenchError::EngineNotBuilt(_)) => (
                false,
                format!("cargo feature `{name}` not compiled into this binary"),
            ),
            Err(_) => (false, "no adapter in this build".to_string()),
        };
        let extra = if name == "rocksdb" {
            format!(
                "; libclang {}, clang {}",
                if libclang_installed() {
                    "installed"
                } else {
                    "missing"
                },
                if java::find_tool("clang").is_some() {
                    "installed"
                } else {
                    "missing"
                }
            )
        } else {
            String::new()
        };
        s.push_str(&format!("| {name} | {} | {how}{extra} |\n", yes_no(ok)));
    }
    let java = java::tool_version("java", &["-version"]);
    let mvn = java::tool_version("mvn", &["-v"]);
    s.push_str(&format!(
        "| java | {} | {} |\n",
        yes_no(java.is_some()),
        java.as_deref().unwrap_or("not on PATH")
    ));
    s.push_str(&format!(
        "| mvn | {} | {} |\n",
        yes_no(mvn.is_some()),
        mvn.as_deref().unwrap_or("not on PATH")
    ));
    for peer in java::ALL {
        let (ok, how) = match (java.is_some(), peer.classpath(java_dir)) {
            (true, Ok(_)) => (true, format!("built: {}", peer.jar(java_dir).display())),
            (false, Ok(_)) => (false, "built, but no java to run it".to_string()),
            (_, Err(why)) => (false, why),
        };
        s.push_str(&format!("| {} | {} | {how} |\n", peer.name(), yes_no(ok)));
    }
    s
}

/// Whether some `/usr/lib/llvm-*/lib/libclang.so` exists (Debian's libclang-dev).
fn libclang_installed() -> bool {
    let Ok(dirs) = std::fs::read_dir(LLVM_ROOT) else {
        return false;
    };
    dirs.flatten().any(|d| {
        d.file_name().to_string_lossy().starts_with("llvm-")
            && d.path().join("lib/libclang.so").exists()
    })
}

/// Output of `<peer> --self-test`, or why it could not run.
pub fn peer_self_test(peer: JavaPeer, java_dir: &Path) -> std::result::Result<String, String> {
    let mut cmd = peer.command(java_dir, 256)?;
    let out = cmd
        .arg("--self-test")
        .output()
        .map_err(|e| format!("could not run java: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "--self-test failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn self_test(java_dir: &Path) -> Result<()> {
    let want = peer_keys::significant_lines(peer_keys::VECTOR_FILE);
    if peer_keys::vector_lines() != want {
        return Err(BenchError::Invalid(
            "this binary's generator does not match bench/java/vector.txt".into(),
        ));
    }
    let mut bad = Vec::new();
    for peer in java::ALL {
        if java::find_tool("java").is_none() || peer.classpath(java_dir).is_err() {
            println!("{}: skipped (not built or no java)", peer.name());
            continue;
        }
        match peer_self_test(peer, java_dir) {
            Ok(text) if peer_keys::significant_lines(&text) == want => {
                println!("{}: matches the shared vector", peer.name());
            }
            Ok(text) => {
                println!("{}: DIFFERS from the shared vector:\n{text}", peer.name());
                bad.push(peer.name());
            }
            Err(why) => {
                println!("{}: FAILED: {why}", peer.name());
                bad.push(peer.name());
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(BenchError::Invalid(format!(
            "self-test failed for {}",
            bad.join(", ")
        )))
    }
}
