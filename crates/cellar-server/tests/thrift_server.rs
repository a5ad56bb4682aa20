//! The Thrift gateway over real sockets, with a small hand-rolled client: transport and
//! protocol detection, bad input (oversized and truncated frames, deep nesting, huge
//! counts, garbage, unknown methods and tables), slow clients and the connection limit.
//! After each bad client the server must still serve others.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use cellar_server::config::Listen;
use cellar_server::thrift::protocol::{
    decode_message, encode_message, message_len, DecodeError, Message, Proto, TType, Value, Writer,
    CALL, EXCEPTION, REPLY,
};
use cellar_server::{ServeConfig, ServerHandle};

struct Server {
    runtime: tokio::runtime::Runtime,
    handle: Option<ServerHandle>,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(configure: impl FnOnce(&mut ServeConfig)) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = ServeConfig::local(dir.path().join("db"));
        config.grpc = Listen::Off;
        config.http = Listen::Off;
        configure(&mut config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let handle = runtime
            .block_on(ServerHandle::start(config))
            .expect("server starts");
        let addr = handle.thrift_addr.expect("thrift listens");
        Server {
            runtime,
            handle: Some(handle),
            addr,
            _dir: dir,
        }
    }

    fn connect(&self, framed: bool, proto: Proto) -> Client {
        Client::new(self.addr, framed, proto)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown();
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(20), h.wait()).await });
        }
    }
}

struct Client {
    s: TcpStream,
    framed: bool,
    proto: Proto,
}

impl Client {
    fn new(addr: SocketAddr, framed: bool, proto: Proto) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Client { s, framed, proto }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("send");
    }

    fn send(&mut self, payload: &[u8]) {
        let mut out = Vec::new();
        if self.framed {
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        }
        out.extend_from_slice(payload);
        self.send_raw(&out);
    }

    fn call_bytes(&mut self, name: &str, args: &[(i16, Value)]) -> Vec<u8> {
        encode_message(self.proto, name, CALL, 1, args)
    }

    /// The next reply; `None` when the server closed the connection.
    fn recv(&mut self) -> Option<Message> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let complete = if self.framed {
                buf.len() >= 4
                    && buf.len()
                        >= 4 + u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize
            } else {
                matches!(message_len(&buf, self.proto), Ok(n) if n == buf.len())
            };
            if complete {
                let payload = if self.framed { &buf[4..] } else { &buf[..] };
                return Some(decode_message(payload, self.proto).expect("a well-formed reply"));
            }
            match self.s.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("reading a reply: {e}"),
            }
        }
    }

    fn call(&mut self, name: &str, args: &[(i16, Value)]) -> Message {
        let bytes = self.call_bytes(name, args);
        self.send(&bytes);
        self.recv().expect("a reply")
    }

    /// Whether the server closed the connection (reads EOF or reset within the timeout).
    fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 64];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

fn text(s: &str) -> Value {
    Value::Binary(s.as_bytes().to_vec())
}

/// The list of table names in a getTableNames reply.
fn table_names(m: &Message) -> Vec<Vec<u8>> {
    assert_eq!((m.name.as_str(), m.kind), ("getTableNames", REPLY));
    match &m.body[..] {
        [(0, Value::List(items))] => items
            .iter()
            .map(|v| match v {
                Value::Binary(b) => b.clone(),
                v => panic!("not a name: {v:?}"),
            })
            .collect(),
        body => panic!("unexpected body {body:?}"),
    }
}

fn create_table(c: &mut Client, name: &str) {
    let cd = Value::Struct(vec![(1, text("cf:"))]);
    let m = c.call(
        "createTable",
        &[(1, text(name)), (2, Value::List(vec![cd]))],
    );
    assert_eq!(m.kind, REPLY);
    assert!(m.body.is_empty(), "createTable failed: {:?}", m.body);
}

fn assert_serves(server: &Server) {
    let mut c = server.connect(false, Proto::Binary);
    table_names(&c.call("getTableNames", &[]));
}

#[test]
fn all_four_transport_protocol_combinations_on_one_port() {
    let server = Server::start(|_| {});
    let mut first = server.connect(true, Proto::Compact);
    create_table(&mut first, "t");
    for framed in [false, true] {
        for proto in [Proto::Binary, Proto::Compact] {
            let mut c = server.connect(framed, proto);
            for _ in 0..3 {
                assert_eq!(
                    table_names(&c.call("getTableNames", &[])),
                    vec![b"t".to_vec()]
                );
            }
        }
    }
}

#[test]
fn old_unversioned_binary_messages_are_served() {
    let server = Server::start(|_| {});
    let mut c = server.connect(false, Proto::Binary);
    let mut msg = Vec::new();
    msg.extend_from_slice(&13i32.to_be_bytes());
    msg.extend_from_slice(b"getTableNames");
    msg.push(CALL);
    msg.extend_from_slice(&1i32.to_be_bytes());
    msg.push(0);
    c.send_raw(&msg);
    table_names(&c.recv().expect("reply"));
}

#[test]
fn oversized_frames_are_refused_before_allocating() {
    let server = Server::start(|c| c.limits.max_request_bytes = 1 << 20);
    for announced in [u32::MAX >> 1, 2 << 20] {
        let mut c = server.connect(true, Proto::Binary);
        let mut bytes = announced.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0x80, 0x01, 0, 1]);
        c.send_raw(&bytes);
        assert!(
            c.is_closed(),
            "a frame of {announced} bytes closes the connection"
        );
    }
    // Unframed: a string announcing 2 GiB is waited for only up to the limit.
    let mut c = server.connect(false, Proto::Binary);
    let mut w = Writer::new(Proto::Binary);
    w.message_begin("getTableNames", CALL, 0);
    w.field(TType::Binary, 1);
    c.send_raw(&w.into_bytes());
    c.send_raw(&(i32::MAX).to_be_bytes());
    let _ = c.s.write_all(&vec![b'x'; (1 << 20) + 1024]);
    assert!(c.is_closed());
    assert_serves(&server);
}

#[test]
fn truncated_frames_and_messages_close_only_their_connection() {
    let server = Server::start(|_| {});
    // A frame that never completes: the client gives up.
    let mut c = server.connect(true, Proto::Binary);
    let mut bytes = 100u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&[0x80, 0x01, 0, 1, 0]);
    c.send_raw(&bytes);
    c.s.shutdown(std::net::Shutdown::Write).expect("half close");
    assert!(c.is_closed());
    // A complete frame holding half a message.
    let mut c = server.connect(true, Proto::Compact);
    let whole = c.call_bytes("getTableNames", &[(1, text("abc"))]);
    c.send(&whole[..whole.len() - 3]);
    assert!(c.is_closed());
    // Bytes after the message inside a frame.
    let mut c = server.connect(true, Proto::Binary);
    let mut long = c.call_bytes("getTableNames", &[]);
    long.extend_from_slice(&[0, 0, 0]);
    c.send(&long);
    assert!(c.is_closed());
    assert_serves(&server);
}

#[test]
fn garbage_first_bytes_close_the_connection() {
    let server = Server::start(|_| {});
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0x16, 3, 1, 0, 200, 1, 0, 0],
    ] {
        let mut c = server.connect(false, Proto::Binary);
        c.send_raw(garbage);
        assert!(c.is_closed());
    }
    assert_serves(&server);
}

#[test]
fn deep_nesting_and_huge_counts_are_refused() {
    let server = Server::start(|_| {});
    for proto in [Proto::Binary, Proto::Compact] {
        let mut c = server.connect(true, proto);
        let mut w = Writer::new(proto);
        w.message_begin("getTableNames", CALL, 0);
        w.field(TType::List, 1);
        for _ in 0..200 {
            w.list_begin(TType::List, 1);
        }
        c.send(&w.into_bytes());
        assert!(c.is_closed(), "{proto}: deep nesting");

        let mut c = server.connect(true, proto);
        let mut w = Writer::new(proto);
        w.message_begin("getRowsWithColumns", CALL, 0);
        w.field(TType::Map, 4);
        w.map_begin(TType::Binary, TType::Binary, i32::MAX as usize);
        w.binary(b"k");
        c.send(&w.into_bytes());
        assert!(c.is_closed(), "{proto}: huge map");
    }
    assert_serves(&server);
}

#[test]
fn unknown_methods_get_an_application_exception_and_the_connection_stays_usable() {
    let server = Server::start(|_| {});
    for (framed, proto) in [(false, Proto::Binary), (true, Proto::Compact)] {
        let mut c = server.connect(framed, proto);
        let m = c.call("grant", &[(1, Value::Struct(vec![(1, text("x"))]))]);
        assert_eq!(m.kind, EXCEPTION);
        let message = m
            .body
            .iter()
            .find(|(id, _)| *id == 1)
            .map(|(_, v)| v.clone());
        match message {
            Some(Value::Binary(b)) => assert!(String::from_utf8_lossy(&b).contains("grant")),
            other => panic!("no message: {other:?}"),
        }
        assert!(m.body.contains(&(2, Value::I32(1))), "type UNKNOWN_METHOD");
        table_names(&c.call("getTableNames", &[]));
    }
}

#[test]
fn unknown_tables_are_an_ioerror() {
    let server = Server::start(|_| {});
    let mut c = server.connect(false, Proto::Compact);
    let m = c.call("getColumnDescriptors", &[(1, text("nope"))]);
    assert_eq!(m.kind, REPLY);
    match &m.body[..] {
        [(1, Value::Struct(fields))] => match &fields[..] {
            [(1, Value::Binary(msg))] => assert!(String::from_utf8_lossy(msg).contains("nope")),
            f => panic!("IOError without a message: {f:?}"),
        },
        body => panic!("expected an IOError, got {body:?}"),
    }
    // A scanner id nobody opened: IllegalArgument (field 2).
    let m = c.call(
        "scannerGetList",
        &[(1, Value::I32(12345)), (2, Value::I32(1))],
    );
    assert!(
        matches!(&m.body[..], [(2, Value::Struct(_))]),
        "{:?}",
        m.body
    );
    table_names(&c.call("getTableNames", &[]));
}

#[test]
fn a_slow_client_does_not_block_others() {
    let server = Server::start(|_| {});
    let mut slow = server.connect(false, Proto::Binary);
    let bytes = slow.call_bytes("getTableNames", &[]);
    let started = Instant::now();
    for (i, b) in bytes.iter().enumerate() {
        slow.send_raw(&[*b]);
        if i % 4 == 0 {
            let mut other = server.connect(true, Proto::Compact);
            let t = Instant::now();
            table_names(&other.call("getTableNames", &[]));
            assert!(
                t.elapsed() < Duration::from_secs(2),
                "another client waited"
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    table_names(&slow.recv().expect("the slow client's reply"));
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn connections_beyond_the_limit_are_refused_clearly() {
    let server = Server::start(|c| c.limits.max_connections = 2);
    let mut a = server.connect(false, Proto::Binary);
    let mut b = server.connect(true, Proto::Compact);
    table_names(&a.call("getTableNames", &[]));
    table_names(&b.call("getTableNames", &[]));
    let mut c = server.connect(true, Proto::Binary);
    let bytes = c.call_bytes("getTableNames", &[]);
    c.send(&bytes);
    match c.recv() {
        None => {}
        Some(m) => {
            assert_eq!(m.kind, EXCEPTION);
            let text = match m.body.iter().find(|(id, _)| *id == 1) {
                Some((_, Value::Binary(b))) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("no message: {other:?}"),
            };
            assert!(text.contains("--max-connections"), "{text}");
        }
    }
    assert!(c.is_closed());
    drop(a);
    // The slot comes back once the server sees the close.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut d = server.connect(false, Proto::Binary);
        let bytes = d.call_bytes("getTableNames", &[]);
        d.send(&bytes);
        if let Some(m) = d.recv() {
            if m.kind == REPLY {
                break;
            }
        }
        assert!(Instant::now() < deadline, "a slot never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
    table_names(&b.call("getTableNames", &[]));
}

#[test]
fn truncated_decoding_is_reported_as_incomplete() {
    // The reader used by every connection: a cut message is Incomplete, never a panic.
    let bytes = encode_message(
        Proto::Compact,
        "scannerGetList",
        CALL,
        0,
        &[(1, Value::I32(5))],
    );
    for cut in 0..bytes.len() {
        assert_eq!(
            message_len(&bytes[..cut], Proto::Compact),
            Err(DecodeError::Incomplete)
        );
    }
}

fn open_scanners(server: &Server) -> i64 {
    server
        .handle
        .as_ref()
        .expect("running")
        .state
        .metrics
        .open_scanners
        .get()
}

#[test]
fn scanners_are_counted_capped_and_closed_with_their_connection() {
    let server = Server::start(|c| {
        c.limits.max_scanners_per_connection = 2;
        c.limits.max_scanners = 3;
    });
    let mut a = server.connect(false, Proto::Binary);
    create_table(&mut a, "s");
    let put = Value::Struct(vec![
        (1, text("row")),
        (
            2,
            Value::List(vec![Value::Struct(vec![(2, text("cf:q")), (3, text("v"))])]),
        ),
    ]);
    let m = a.call("mutateRows", &[(1, text("s")), (2, Value::List(vec![put]))]);
    assert!(m.body.is_empty(), "{:?}", m.body);
    let open = |c: &mut Client| {
        c.call(
            "scannerOpenWithScan",
            &[(1, text("s")), (2, Value::Struct(vec![(1, text(""))]))],
        )
    };
    let id = |m: &Message| match &m.body[..] {
        [(0, Value::I32(id))] => *id,
        body => panic!("no scanner id: {body:?}"),
    };
    let s1 = id(&open(&mut a));
    id(&open(&mut a));
    assert_eq!(open_scanners(&server), 2);
    // Per connection: the third is an IOError.
    assert!(matches!(&open(&mut a).body[..], [(1, Value::Struct(_))]));
    let mut b = server.connect(true, Proto::Compact);
    id(&open(&mut b));
    // In total: the fourth is an IOError.
    assert!(matches!(&open(&mut b).body[..], [(1, Value::Struct(_))]));
    assert_eq!(open_scanners(&server), 3);
    let rows = a.call(
        "scannerGetList",
        &[(1, Value::I32(s1)), (2, Value::I32(10))],
    );
    match &rows.body[..] {
        [(0, Value::List(items))] => assert_eq!(items.len(), 1),
        body => panic!("{body:?}"),
    }
    let m = a.call("scannerClose", &[(1, Value::I32(s1))]);
    assert!(m.body.is_empty());
    assert_eq!(open_scanners(&server), 2);
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_scanners(&server) != 1 {
        assert!(
            Instant::now() < deadline,
            "scanners of a closed connection stay open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(b);
    while open_scanners(&server) != 0 {
        assert!(
            Instant::now() < deadline,
            "scanners of a closed connection stay open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn idle_scanners_expire_with_a_clear_illegal_argument() {
    let server = Server::start(|c| c.limits.scanner_idle_timeout = Duration::from_millis(300));
    let mut c = server.connect(true, Proto::Binary);
    create_table(&mut c, "e");
    let open = c.call(
        "scannerOpenWithScan",
        &[(1, text("e")), (2, Value::Struct(vec![]))],
    );
    let id = match &open.body[..] {
        [(0, Value::I32(id))] => *id,
        body => panic!("no scanner id: {body:?}"),
    };
    // Reads more often than the timeout keep it open.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(150));
        let m = c.call("scannerGetList", &[(1, Value::I32(id)), (2, Value::I32(1))]);
        assert!(matches!(&m.body[..], [(0, Value::List(_))]), "{:?}", m.body);
    }
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(open_scanners(&server), 0, "the sweep closed it");
    let m = c.call("scannerGetList", &[(1, Value::I32(id)), (2, Value::I32(1))]);
    match &m.body[..] {
        [(2, Value::Struct(fields))] => match &fields[..] {
            [(1, Value::Binary(msg))] => {
                let msg = String::from_utf8_lossy(msg);
                assert!(
                    msg.contains("expired") && msg.contains("inactivity"),
                    "{msg}"
                );
            }
            f => panic!("{f:?}"),
        },
        body => panic!("expected IllegalArgument, got {body:?}"),
    }
    let state = &server.handle.as_ref().expect("running").state;
    assert_eq!(state.metrics.scanners_expired.get(), 1);
}
