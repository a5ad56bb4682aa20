//! The Java peers (bench/java: Hadoop MapFile, HBase): where they are, whether they are built, and the
//! `java` command that runs one.
//!
//! `mvn package` in bench/java leaves, per peer module, `target/cellar-peer-<name>.jar` and
//! `target/classpath.txt` (its runtime dependencies, ':'-separated). A peer runs as
//! `java <JVM_FLAGS> -Xmx<heap>m -cp <jar>:<classpath> dev.cellar.peers.<Main> <args>` and
//! prints each measurement as one bare JSON line on stdout
//! ([`crate::child::collect_peer_lines`]), progress on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Flags HBase 2.6 needs on JDK 17 (shared/peers.md); harmless for MapFile.
pub const JVM_FLAGS: &[&str] = &[
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.random=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
];

/// Environment variable naming the bench/java folder (default: the one of this source tree).
pub const JAVA_DIR_ENV: &str = "CELLAR_BENCH_JAVA_DIR";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JavaPeer {
    MapFile,
    HBase,
}

pub const ALL: [JavaPeer; 2] = [JavaPeer::MapFile, JavaPeer::HBase];

impl JavaPeer {
    pub fn from_name(name: &str) -> Option<JavaPeer> {
        ALL.into_iter().find(|p| p.name() == name)
    }

    /// The engine name in results and on the command line; also the Maven module.
    pub fn name(self) -> &'static str {
        match self {
            JavaPeer::MapFile => "mapfile",
            JavaPeer::HBase => "hbase",
        }
    }

    pub fn main_class(self) -> &'static str {
        match self {
            JavaPeer::MapFile => "dev.cellar.peers.MapFileBench",
            JavaPeer::HBase => "dev.cellar.peers.HBaseBench",
        }
    }

    pub fn jar(self, java_dir: &Path) -> PathBuf {
        java_dir
            .join(self.name())
            .join("target")
            .join(format!("cellar-peer-{}.jar", self.name()))
    }

    pub fn classpath_file(self, java_dir: &Path) -> PathBuf {
        java_dir
            .join(self.name())
            .join("target")
            .join("classpath.txt")
    }

    /// The full class path, or why the peer is not built.
    pub fn classpath(self, java_dir: &Path) -> Result<String, String> {
        let jar = self.jar(java_dir);
        if !jar.is_file() {
            return Err(format!(
                "{} is not built (no {}): run `cellar-bench peers setup`",
                self.name(),
                jar.display()
            ));
        }
        let cp_file = self.classpath_file(java_dir);
        let deps =
            std::fs::read_to_string(&cp_file).map_err(|e| format!("{}: {e}", cp_file.display()))?;
        Ok(format!("{}:{}", jar.display(), deps.trim()))
    }

    /// `java ... <Main>` ready for its arguments, or why it cannot run.
    pub fn command(self, java_dir: &Path, heap_mb: u64) -> Result<Command, String> {
        self.command_with_main(java_dir, heap_mb, self.main_class())
    }

    /// The same, with another main class of the peer's jar (`elliptics`' HBaseElliptics).
    pub fn command_with_main(
        self,
        java_dir: &Path,
        heap_mb: u64,
        main_class: &str,
    ) -> Result<Command, String> {
        let java = find_tool("java").ok_or("no `java` on PATH (install openjdk-17-jdk)")?;
        let cp = self.classpath(java_dir)?;
        let mut c = Command::new(java);
        c.args(JVM_FLAGS)
            .arg(format!("-Xmx{heap_mb}m"))
            .arg("-cp")
            .arg(cp)
            .arg(main_class);
        Ok(c)
    }
}

/// bench/java: `$CELLAR_BENCH_JAVA_DIR`, else the folder of the source tree this binary was
/// built from, else `./bench/java`.
pub fn default_java_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(JAVA_DIR_ENV) {
        return PathBuf::from(d);
    }
    let from_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/java");
    if from_source.join("pom.xml").is_file() {
        return std::fs::canonicalize(&from_source).unwrap_or(from_source);
    }
    PathBuf::from("bench/java")
}

/// The first executable named `name` on PATH.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The first line `tool <args>` prints (stdout or stderr), e.g. `java -version`.
pub fn tool_version(tool: &str, args: &[&str]) -> Option<String> {
    let path = find_tool(tool)?;
    let out = Command::new(path).args(args).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let line = String::from_utf8_lossy(&text).lines().next()?.to_string();
    // mvn colours its banner even when not on a terminal.
    Some(strip_ansi(&line))
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A result line a Java peer prints: which engine and workload it belongs to.
pub trait PeerLine: serde::de::DeserializeOwned {
    fn engine(&self) -> &str;
    fn workload(&self) -> &str;
}

/// Runs a Java peer (`cmd`, with its arguments) and collects the JSON result lines it prints
/// on stdout that belong to `engine` and to a workload `wanted` accepts (the protocol of
/// [`crate::child`], bare lines). The lines that arrived stay in `out` whatever the outcome.
pub fn collect_peer_lines<L: PeerLine>(
    cmd: &mut Command,
    engine: &str,
    wanted: impl Fn(&str) -> bool,
    out: &mut Vec<L>,
) -> crate::error::Result<()> {
    let accept = |l: &L| {
        if l.engine() == engine && wanted(l.workload()) {
            Ok(())
        } else {
            Err(format!(
                "sent a line for {:?}/{:?}",
                l.engine(),
                l.workload()
            ))
        }
    };
    let (mut got, result) = crate::child::collect_peer_lines(cmd, engine, accept);
    out.append(&mut got);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_resolve_by_name_and_say_when_not_built() {
        assert_eq!(JavaPeer::from_name("hbase"), Some(JavaPeer::HBase));
        assert_eq!(JavaPeer::from_name("cellar"), None);
        let empty = tempfile::tempdir().unwrap();
        let why = JavaPeer::MapFile.classpath(empty.path()).unwrap_err();
        assert!(why.contains("not built"), "{why}");
    }

    #[test]
    fn ansi_colours_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[1mApache Maven 3.8.7\u{1b}[m"),
            "Apache Maven 3.8.7"
        );
    }
}
