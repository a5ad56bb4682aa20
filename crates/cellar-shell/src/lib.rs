//! Cellar's HQL shell (`cellar shell`, and the server's `Hql` call): statements run
//! interactively (line editing, history), from a reader (`--batch`) or from a string (`-e`).
//! Results are printed as each statement completes.

mod cells;
pub mod exec;
pub mod progress;

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;

use cellar_engine::Durability;
use cellar_hql::{StatementReader, StatementText};
use cellar_table::CellStore;

use exec::{ExecError, Flow, Session};

/// How a shell run ended.
pub struct ShellOutcome {
    pub failed_statements: usize,
}

pub struct ShellOptions {
    pub durability: Durability,
    /// Go on after a failed statement (batch and -e).
    pub keep_going: bool,
    pub quiet_progress: bool,
}

/// Runs every statement of `text`, stopping at the first failure unless `keep_going`.
fn run_text(
    session: &Session<'_>,
    st: &StatementText,
    out: &mut dyn Write,
    failed: &mut usize,
    keep_going: bool,
) -> io::Result<Flow> {
    let statements = match st.parse() {
        Ok(s) => s,
        Err(e) => {
            out.flush()?;
            eprintln!("error: {}", ExecError::Parse(e));
            *failed += 1;
            return Ok(if keep_going {
                Flow::Continue
            } else {
                Flow::Quit
            });
        }
    };
    for s in statements {
        let r = session.execute(&s.node, out);
        out.flush()?;
        match r {
            Ok(Flow::Quit) => return Ok(Flow::Quit),
            Ok(Flow::Continue) => {}
            Err(ExecError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => return Err(e),
            Err(e) => {
                eprintln!("error (line {}): {e}", s.line);
                *failed += 1;
                if !keep_going {
                    return Ok(Flow::Quit);
                }
            }
        }
    }
    Ok(Flow::Continue)
}

/// `-e "stmt; stmt"` and `--batch`: statements from a string or a reader.
pub fn run_script(
    store: &CellStore,
    opts: &ShellOptions,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> io::Result<ShellOutcome> {
    let progress = progress::LoadProgress::new(opts.quiet_progress);
    let session = Session {
        store,
        durability: opts.durability,
        progress: &progress,
    };
    let mut reader = StatementReader::new();
    let mut failed = 0;
    let mut line = String::new();
    loop {
        line.clear();
        let n = input.read_line(&mut line)?;
        if n == 0 {
            break;
        }
        reader.push(&line);
        while let Some(st) = reader.next_statement() {
            if run_text(&session, &st, out, &mut failed, opts.keep_going)? == Flow::Quit {
                return Ok(ShellOutcome {
                    failed_statements: failed,
                });
            }
        }
    }
    if let Some(st) = reader.finish() {
        run_text(&session, &st, out, &mut failed, opts.keep_going)?;
    }
    Ok(ShellOutcome {
        failed_statements: failed,
    })
}

/// The interactive shell: line editing and history (`~/.cellar_history`).
pub fn run_interactive(store: &CellStore, opts: &ShellOptions) -> io::Result<ShellOutcome> {
    if !io::stdin().is_terminal() {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let stdout = io::stdout();
        let mut out = io::BufWriter::new(stdout.lock());
        return run_script(store, opts, &mut input, &mut out);
    }
    let mut editor = rustyline::DefaultEditor::new().map_err(io::Error::other)?;
    let history = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cellar_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let progress = progress::LoadProgress::new(opts.quiet_progress);
    let session = Session {
        store,
        durability: opts.durability,
        progress: &progress,
    };
    println!("Cellar shell. Statements end with ';'. Type HELP; for help, QUIT; to leave.");
    let mut reader = StatementReader::new();
    let mut failed = 0;
    let stdout = io::stdout();
    loop {
        let prompt = if reader.needs_more() {
            "    -> "
        } else {
            "cellar> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                reader.push(&line);
                reader.push("\n");
                while let Some(st) = reader.next_statement() {
                    let _ = editor.add_history_entry(st.text.trim());
                    let mut out = stdout.lock();
                    if run_text(&session, &st, &mut out, &mut failed, true)? == Flow::Quit {
                        if let Some(h) = &history {
                            let _ = editor.save_history(h);
                        }
                        return Ok(ShellOutcome {
                            failed_statements: failed,
                        });
                    }
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => {
                reader = StatementReader::new();
            }
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(io::Error::other(e)),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(ShellOutcome {
        failed_statements: failed,
    })
}
