//! Which transport and protocol a connection speaks, told from its first bytes, so that
//! one port serves all four combinations happybase offers (HBase needs a port per
//! combination, and a mismatch is its users' most common failure).
//!
//! - `0x80 0x01 ...`: unframed ("buffered") binary, strict header;
//! - `0x82 ...`: unframed compact;
//! - four length bytes, then `0x80 0x01` or `0x82`: framed binary or compact;
//! - a small big-endian length then an ASCII method name: unframed binary with the old
//!   unversioned header.

use super::protocol::Proto;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Buffered,
    Framed,
}

/// A connection's transport and protocol; replies use the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    pub framing: Framing,
    pub proto: Proto,
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let framing = match self.framing {
            Framing::Buffered => "buffered",
            Framing::Framed => "framed",
        };
        write!(f, "{framing} {}", self.proto)
    }
}

/// What the first bytes say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// Not enough bytes yet.
    NeedMore,
    Wire(Wire),
    /// Not Thrift as happybase speaks it: why, for the log.
    Garbage(String),
}

/// Longest method name the old unversioned header is recognised with.
const MAX_OLD_NAME: usize = 64;

pub fn detect(b: &[u8]) -> Detected {
    let wire = |framing, proto| Detected::Wire(Wire { framing, proto });
    match b {
        [] => Detected::NeedMore,
        [0x82, ..] => wire(Framing::Buffered, Proto::Compact),
        [0x80] => Detected::NeedMore,
        [0x80, 0x01, ..] => wire(Framing::Buffered, Proto::Binary),
        [0x80, ..] => garbage(b),
        _ if b.len() < 6 => {
            if looks_like_http(b) {
                return garbage(b);
            }
            Detected::NeedMore
        }
        [_, _, _, _, 0x80, 0x01, ..] => wire(Framing::Framed, Proto::Binary),
        [_, _, _, _, 0x82, ..] => wire(Framing::Framed, Proto::Compact),
        [0, 0, 0, n, rest @ ..] if (1..=MAX_OLD_NAME as u8).contains(n) => {
            let shown = rest.len().min(usize::from(*n));
            if rest[..shown]
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                wire(Framing::Buffered, Proto::Binary)
            } else {
                garbage(b)
            }
        }
        _ => garbage(b),
    }
}

fn looks_like_http(b: &[u8]) -> bool {
    [
        &b"GET "[..],
        b"POST",
        b"PUT ",
        b"HEAD",
        b"PRI ",
        b"DELE",
        b"OPTI",
    ]
    .iter()
    .any(|m| m.starts_with(b) || b.starts_with(m))
        && b.len() >= 3
}

fn garbage(b: &[u8]) -> Detected {
    let head: Vec<String> = b.iter().take(8).map(|x| format!("{x:02x}")).collect();
    let hint = if looks_like_http(b) {
        "this looks like HTTP: the Thrift port speaks Thrift only (REST is on the --http port)"
    } else {
        "expected Thrift binary (80 01) or compact (82), unframed or after a 4-byte frame \
         length; is the client using TLS, SASL or another protocol?"
    };
    Detected::Garbage(format!("first bytes {}: {hint}", head.join(" ")))
}

/// `payload` as the transport sends it: framed adds the 4-byte length.
pub fn frame(wire: Wire, payload: Vec<u8>) -> Vec<u8> {
    match wire.framing {
        Framing::Buffered => payload,
        Framing::Framed => {
            let mut out = Vec::with_capacity(payload.len() + 4);
            out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            out.extend_from_slice(&payload);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_the_four_combinations_and_refuses_garbage() {
        let w = |framing, proto| Detected::Wire(Wire { framing, proto });
        assert_eq!(
            detect(&[0x80, 0x01, 0, 1]),
            w(Framing::Buffered, Proto::Binary)
        );
        assert_eq!(detect(&[0x82, 0x21]), w(Framing::Buffered, Proto::Compact));
        assert_eq!(
            detect(&[0, 0, 0, 20, 0x80, 0x01]),
            w(Framing::Framed, Proto::Binary)
        );
        assert_eq!(
            detect(&[0, 0, 0, 20, 0x82, 0x21]),
            w(Framing::Framed, Proto::Compact)
        );
        assert_eq!(
            detect(b"\0\0\0\x06getVer"),
            w(Framing::Buffered, Proto::Binary)
        );
        assert_eq!(detect(&[0, 0, 0]), Detected::NeedMore);
        assert!(
            matches!(detect(b"GET / HTTP/1.1\r\n"), Detected::Garbage(m) if m.contains("HTTP"))
        );
        assert!(matches!(detect(b"GET"), Detected::Garbage(_)));
        assert!(matches!(
            detect(&[0x16, 3, 1, 2, 0, 1, 0]),
            Detected::Garbage(_)
        ));
        assert!(matches!(detect(&[0x80, 0x02]), Detected::Garbage(_)));
    }
}
