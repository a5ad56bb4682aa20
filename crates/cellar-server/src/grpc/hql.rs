//! `Hql`: statements run by the shell's own executor (`cellar_shell::exec::Session`) on the
//! blocking pool; what the shell would print streams back in pieces, and a failed
//! statement's error (with its line, as the shell prints it) ends the output unless
//! `keep_going`.
//!
//! The statements run with the server's rights: `LOAD DATA INFILE` and `DUMP TABLE ... INTO
//! FILE` read and write paths on the server's machine (docs/server.md says so).

use std::io::{self, Write};
use std::sync::Arc;

use cellar_engine::Durability;
use cellar_hql::{StatementReader, StatementText};
use cellar_load::NoProgress;
use cellar_proto::v1 as pb;
use cellar_shell::exec::{ExecError, Flow, Session};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::metrics::Protocol;
use crate::state::ServerState;

/// Output is sent once this much has accumulated (and after each statement).
const PIECE_BYTES: usize = 64 << 10;

pub type HqlStream = ReceiverStream<Result<pb::HqlResponse, Status>>;

/// Starts running `req`'s statements; their output is the returned stream.
pub fn start(state: &Arc<ServerState>, req: pb::HqlRequest) -> Result<HqlStream, Status> {
    let durability = super::convert::durability(req.durability, state)?;
    let (tx, rx) = mpsc::channel(4);
    let st = Arc::clone(state);
    // Not `run_blocking`: the stream is returned before the statements finish; the request
    // is recorded when they do.
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut out = PieceWriter {
            tx,
            buf: String::new(),
            state: Arc::clone(&st),
        };
        let failed = run(&st, &req.statements, durability, req.keep_going, &mut out);
        let _ = out.send_piece();
        st.finish_request(Protocol::Grpc, "Hql", started.elapsed(), failed == 0);
    });
    Ok(ReceiverStream::new(rx))
}

/// Runs every statement of `text`; returns how many failed.
fn run(
    state: &ServerState,
    text: &str,
    durability: Durability,
    keep_going: bool,
    out: &mut PieceWriter,
) -> usize {
    let session = Session {
        store: &state.store,
        durability,
        progress: &NoProgress,
    };
    let mut reader = StatementReader::new();
    reader.push(text);
    reader.push("\n");
    let mut failed = 0;
    while let Some(st) = reader.next_statement().or_else(|| reader.finish()) {
        match run_statement(state, &session, &st, out) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Quit) => break,
            Err(message) => {
                failed += 1;
                if out.send_error(message).is_err() || !keep_going {
                    break;
                }
            }
        }
        if out.send_piece().is_err() {
            break;
        }
    }
    failed
}

/// Runs one statement text; `Err` is the error line the shell would print.
fn run_statement(
    state: &ServerState,
    session: &Session<'_>,
    st: &StatementText,
    out: &mut PieceWriter,
) -> Result<Flow, String> {
    let statements = st
        .parse()
        .map_err(|e| format!("error: {}", ExecError::Parse(e)))?;
    for s in statements {
        match session.execute(&s.node, out) {
            Ok(Flow::Continue) => {
                // A table dropped here is forgotten like one dropped through the API.
                if let cellar_hql::Statement::DropTable(d) = &s.node {
                    state.forget_table(&d.name);
                }
            }
            Ok(Flow::Quit) => return Ok(Flow::Quit),
            Err(e) => return Err(format!("error (line {}): {e}", s.line)),
        }
    }
    Ok(Flow::Continue)
}

/// The shell's output, sent in pieces; a write fails once the client has gone.
struct PieceWriter {
    tx: mpsc::Sender<Result<pb::HqlResponse, Status>>,
    buf: String,
    state: Arc<ServerState>,
}

impl PieceWriter {
    fn send(&self, message: pb::HqlResponse) -> io::Result<()> {
        use prost::Message;
        self.state
            .metrics
            .sent(Protocol::Grpc, message.encoded_len());
        self.tx
            .blocking_send(Ok(message))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }

    fn send_piece(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let output = std::mem::take(&mut self.buf);
        self.send(pb::HqlResponse {
            output,
            error: String::new(),
        })
    }

    fn send_error(&mut self, error: String) -> io::Result<()> {
        self.send_piece()?;
        self.send(pb::HqlResponse {
            output: String::new(),
            error,
        })
    }
}

impl Write for PieceWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // The shell writes UTF-8 (it escapes binary keys and values).
        self.buf.push_str(&String::from_utf8_lossy(bytes));
        if self.buf.len() >= PIECE_BYTES {
            self.send_piece()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
