//! The command line that produced a result, for the `command` field of every
//! [`crate::record::Record`] (so RESULTS.md can show the exact command under each table).
//!
//! A workload's child process (`cellar-bench ycsb --child '{...}'`) must record its
//! parent's command, not its own internal invocation: the parent passes its command line
//! down in [`COMMAND_ENV`] ([`pass_to_child`]), and [`command_line`] prefers that variable
//! to the process's own arguments. [`crate::record::Stamp::now`] reads it; a new workload
//! calls `pass_to_child` when it spawns a child ([`crate::child::run_child`] does).

use std::process::Command;

/// Environment variable through which a parent hands its command line to its children.
pub const COMMAND_ENV: &str = "CELLAR_BENCH_COMMAND";

/// The command line of the `cellar-bench` invocation the user typed: the parent's (from
/// [`COMMAND_ENV`]) in a child process, else this process's arguments, the program as its
/// file name (`cellar-bench`, not `./target/release/cellar-bench`), each argument quoted
/// for a POSIX shell where it needs it.
pub fn command_line() -> String {
    match std::env::var(COMMAND_ENV) {
        Ok(c) if !c.trim().is_empty() => c,
        _ => from_args(std::env::args()),
    }
}

/// Sets [`COMMAND_ENV`] on `cmd` (a child of this process) to this process's command line.
pub fn pass_to_child(cmd: &mut Command) -> &mut Command {
    cmd.env(COMMAND_ENV, command_line())
}

fn from_args(args: impl IntoIterator<Item = String>) -> String {
    let mut parts = Vec::new();
    for (i, a) in args.into_iter().enumerate() {
        let a = if i == 0 {
            // The path the binary was started by says where it was built, not what ran.
            std::path::Path::new(&a)
                .file_name()
                .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
        } else {
            a
        };
        parts.push(shell_quote(&a));
    }
    parts.join(" ")
}

/// `s` as one POSIX shell word: unchanged when it has only safe characters, else in single
/// quotes (a `'` inside written as `'\''`).
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=,:+@%^".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("--num"), "--num");
        assert_eq!(shell_quote("cellar,rocksdb"), "cellar,rocksdb");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn command_program_is_its_file_name() {
        let args = [
            "./target/release/cellar-bench",
            "db",
            "--json",
            "/tmp/x y.jsonl",
        ];
        assert_eq!(
            from_args(args.iter().map(|s| s.to_string())),
            "cellar-bench db --json '/tmp/x y.jsonl'"
        );
    }
}
