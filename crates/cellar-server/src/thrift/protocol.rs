//! Thrift's binary and compact protocols: a reader over one complete message held in
//! memory, and a writer that builds a reply.
//!
//! The reader never allocates more than the bytes it has been given can justify: a string
//! or container whose announced length exceeds the bytes left is an error before anything
//! is reserved, nesting is bounded, and so is the number of decoded values (each costs
//! memory beyond its wire bytes). [`message_len`] (and `message_end.rs`, which resumes as
//! bytes arrive) walks a message without allocating, so a connection reading an unframed
//! stream can tell when a whole message has arrived.

use std::fmt;

/// Wire type codes, as the binary protocol writes them (the compact protocol's codes
/// are translated on the way in and out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TType {
    Bool = 2,
    Byte = 3,
    Double = 4,
    I16 = 6,
    I32 = 8,
    I64 = 10,
    Binary = 11,
    Struct = 12,
    Map = 13,
    Set = 14,
    List = 15,
}

impl TType {
    fn from_binary(code: u8) -> Option<TType> {
        Some(match code {
            2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::Double,
            6 => TType::I16,
            8 => TType::I32,
            10 => TType::I64,
            11 => TType::Binary,
            12 => TType::Struct,
            13 => TType::Map,
            14 => TType::Set,
            15 => TType::List,
            _ => return None,
        })
    }

    fn from_compact(code: u8) -> Option<TType> {
        Some(match code {
            1 | 2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::I16,
            5 => TType::I32,
            6 => TType::I64,
            7 => TType::Double,
            8 => TType::Binary,
            9 => TType::List,
            10 => TType::Set,
            11 => TType::Map,
            12 => TType::Struct,
            _ => return None,
        })
    }

    /// The compact protocol's code of this type.
    pub(crate) fn compact(self) -> u8 {
        match self {
            TType::Bool => 1,
            TType::Byte => 3,
            TType::I16 => 4,
            TType::I32 => 5,
            TType::I64 => 6,
            TType::Double => 7,
            TType::Binary => 8,
            TType::List => 9,
            TType::Set => 10,
            TType::Map => 11,
            TType::Struct => 12,
        }
    }
}

/// Which protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Binary,
    Compact,
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proto::Binary => "binary",
            Proto::Compact => "compact",
        })
    }
}

/// Message types.
pub const CALL: u8 = 1;
pub const REPLY: u8 = 2;
pub const EXCEPTION: u8 = 3;
pub const ONEWAY: u8 = 4;

/// Containers inside containers, structs inside structs: deeper is refused.
pub const MAX_DEPTH: usize = 64;
/// Decoded values per message: each costs ~40 bytes of memory whatever its wire size.
pub const MAX_VALUES: usize = 2_000_000;

/// Why bytes are not (yet) a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes end before the message does (unframed: read more; framed: truncated).
    #[error("the message ends early (truncated)")]
    Incomplete,
    #[error("malformed {proto} message at byte {at}: {reason}")]
    Invalid {
        proto: Proto,
        at: usize,
        reason: String,
    },
    #[error("the message nests structs or containers deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("the message holds more than {MAX_VALUES} values")]
    TooManyValues,
}

/// A decoded value, kept generic so that unknown fields are checked and dropped the same
/// way as known ones; `idl.rs` turns values into typed structs.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    Binary(Vec<u8>),
    Struct(Vec<(i16, Value)>),
    List(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

/// A message's header and its argument (or result) struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub name: String,
    pub kind: u8,
    pub seqid: i32,
    pub body: Vec<(i16, Value)>,
}

/// Reads values from a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    proto: Proto,
    /// Compact: the last field id of each open struct.
    last_ids: Vec<i16>,
    /// Compact: a bool field carries its value in the field header.
    pending_bool: Option<bool>,
    values: usize,
    /// `false`: only check and measure, build nothing.
    build: bool,
}

type R<T> = Result<T, DecodeError>;

/// A reader's place, to rewind to (`message_end.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pos: usize,
    values: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], proto: Proto) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            proto,
            last_ids: vec![0],
            pending_bool: None,
            values: 0,
            build: true,
        }
    }

    /// A reader that checks and measures, building nothing (for [`message_len`] and
    /// `message_end.rs`).
    pub(super) fn measuring(buf: &'a [u8], proto: Proto) -> Reader<'a> {
        Reader {
            build: false,
            ..Reader::new(buf, proto)
        }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// Continues a walk that stopped at `pos` with this many values counted. The compact
    /// protocol's field ids then count from a made-up last id: a walk that only measures
    /// ignores them, and they never change where a message ends.
    pub(super) fn resume(&mut self, pos: usize, values: usize) {
        (self.pos, self.values) = (pos, values);
        self.pending_bool = None;
    }

    /// The place and count [`Reader::resume`] takes back.
    pub(super) fn suspend(self) -> (usize, usize) {
        (self.pos, self.values)
    }

    /// Where the reader is, to go back to if what follows is cut short.
    pub(super) fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            values: self.values,
        }
    }

    /// Back to `mark`.
    pub(super) fn rewind(&mut self, mark: Mark) {
        (self.pos, self.values) = (mark.pos, mark.values);
        self.pending_bool = None;
    }

    /// Counts one more value against [`MAX_VALUES`].
    pub(super) fn count_value(&mut self) -> R<()> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(DecodeError::TooManyValues);
        }
        Ok(())
    }

    fn invalid(&self, reason: impl Into<String>) -> DecodeError {
        DecodeError::Invalid {
            proto: self.proto,
            at: self.pos,
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::Incomplete)?;
        let s = self.buf.get(self.pos..end).ok_or(DecodeError::Incomplete)?;
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    fn be_i16(&mut self) -> R<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn be_i32(&mut self) -> R<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn varint(&mut self) -> R<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err(self.invalid("varint longer than 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.invalid("varint longer than 10 bytes"))
    }

    fn zigzag(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A length or count, checked against the bytes left (each element takes at least
    /// `min_each` bytes), so nothing is reserved for what cannot be there.
    fn count(&mut self, raw: i64, min_each: usize) -> R<usize> {
        if raw < 0 {
            return Err(self.invalid(format!("negative length {raw}")));
        }
        let n = usize::try_from(raw).map_err(|_| self.invalid("length too large"))?;
        let left = self.buf.len() - self.pos;
        if n.saturating_mul(min_each) > left {
            return Err(DecodeError::Incomplete);
        }
        Ok(n)
    }

    /// The message header: (name, type, seqid).
    pub fn message_begin(&mut self) -> R<(String, u8, i32)> {
        let (name, kind, seqid) = match self.proto {
            Proto::Binary => {
                let first = self.be_i32()?;
                if first < 0 {
                    let version = (first as u32) & 0xffff_0000;
                    if version != 0x8001_0000 {
                        return Err(self.invalid(format!("bad version word {first:#x}")));
                    }
                    let kind = (first & 0xff) as u8;
                    let name = self.binary()?;
                    (name, kind, self.be_i32()?)
                } else {
                    // Old unversioned form: the name's length comes first.
                    let n = self.count(i64::from(first), 1)?;
                    let name = self.take(n)?.to_vec();
                    let kind = self.u8()?;
                    (name, kind, self.be_i32()?)
                }
            }
            Proto::Compact => {
                if self.u8()? != 0x82 {
                    return Err(self.invalid("compact messages start with 0x82"));
                }
                let vt = self.u8()?;
                if vt & 0x1f != 1 {
                    return Err(self.invalid(format!("compact version {} (1 expected)", vt & 0x1f)));
                }
                let seqid = self.varint()? as i32;
                let name = self.binary()?;
                (name, vt >> 5, seqid)
            }
        };
        let name = String::from_utf8(name).map_err(|_| self.invalid("method name is not UTF-8"))?;
        Ok((name, kind, seqid))
    }

    fn binary(&mut self) -> R<Vec<u8>> {
        let raw = match self.proto {
            Proto::Binary => i64::from(self.be_i32()?),
            Proto::Compact => self.varint()? as i64,
        };
        let n = self.count(raw, 1)?;
        let bytes = self.take(n)?;
        Ok(if self.build {
            bytes.to_vec()
        } else {
            Vec::new()
        })
    }

    /// The next field header of the current struct: `None` at its end.
    pub(super) fn field_begin(&mut self) -> R<Option<(TType, i16)>> {
        match self.proto {
            Proto::Binary => {
                let code = self.u8()?;
                if code == 0 {
                    return Ok(None);
                }
                let t = TType::from_binary(code)
                    .ok_or_else(|| self.invalid(format!("unknown field type {code}")))?;
                Ok(Some((t, self.be_i16()?)))
            }
            Proto::Compact => {
                let b = self.u8()?;
                if b == 0 {
                    return Ok(None);
                }
                let code = b & 0x0f;
                let t = TType::from_compact(code)
                    .ok_or_else(|| self.invalid(format!("unknown compact field type {code}")))?;
                let delta = i16::from(b >> 4);
                let last = self.last_ids.last().copied().unwrap_or(0);
                let id = if delta == 0 {
                    let v = self.zigzag()?;
                    i16::try_from(v).map_err(|_| self.invalid("field id out of range"))?
                } else {
                    last.wrapping_add(delta)
                };
                if let Some(l) = self.last_ids.last_mut() {
                    *l = id;
                }
                if t == TType::Bool {
                    self.pending_bool = Some(code == 1);
                }
                Ok(Some((t, id)))
            }
        }
    }

    pub(super) fn list_begin(&mut self) -> R<(TType, usize)> {
        match self.proto {
            Proto::Binary => {
                let code = self.u8()?;
                let raw = self.be_i32()?;
                let t = TType::from_binary(code)
                    .ok_or_else(|| self.invalid(format!("unknown element type {code}")))?;
                Ok((t, self.count(i64::from(raw), 1)?))
            }
            Proto::Compact => {
                let b = self.u8()?;
                let code = b & 0x0f;
                let t = TType::from_compact(code)
                    .ok_or_else(|| self.invalid(format!("unknown element type {code}")))?;
                let raw = if b >> 4 == 0x0f {
                    self.varint()? as i64
                } else {
                    i64::from(b >> 4)
                };
                Ok((t, self.count(raw, 1)?))
            }
        }
    }

    pub(super) fn map_begin(&mut self) -> R<(TType, TType, usize)> {
        match self.proto {
            Proto::Binary => {
                let (k, v) = (self.u8()?, self.u8()?);
                let raw = self.be_i32()?;
                let kt = TType::from_binary(k)
                    .ok_or_else(|| self.invalid(format!("unknown key type {k}")))?;
                let vt = TType::from_binary(v)
                    .ok_or_else(|| self.invalid(format!("unknown value type {v}")))?;
                Ok((kt, vt, self.count(i64::from(raw), 2)?))
            }
            Proto::Compact => {
                let raw = self.varint()? as i64;
                if raw == 0 {
                    return Ok((TType::Binary, TType::Binary, 0));
                }
                let n = self.count(raw, 2)?;
                let b = self.u8()?;
                let kt = TType::from_compact(b >> 4)
                    .ok_or_else(|| self.invalid(format!("unknown key type {}", b >> 4)))?;
                let vt = TType::from_compact(b & 0x0f)
                    .ok_or_else(|| self.invalid(format!("unknown value type {}", b & 0x0f)))?;
                Ok((kt, vt, n))
            }
        }
    }

    /// One value of type `t`; `depth` counts the structs and containers around it.
    pub fn value(&mut self, t: TType, depth: usize) -> R<Value> {
        self.count_value()?;
        Ok(match t {
            TType::Bool => Value::Bool(match self.pending_bool.take() {
                Some(b) => b,
                None => match self.proto {
                    Proto::Binary => self.u8()? != 0,
                    Proto::Compact => self.u8()? == 1,
                },
            }),
            TType::Byte => Value::Byte(self.u8()? as i8),
            TType::I16 => Value::I16(match self.proto {
                Proto::Binary => self.be_i16()?,
                Proto::Compact => self.zigzag()? as i16,
            }),
            TType::I32 => Value::I32(match self.proto {
                Proto::Binary => self.be_i32()?,
                Proto::Compact => self.zigzag()? as i32,
            }),
            TType::I64 => Value::I64(match self.proto {
                Proto::Binary => {
                    let b = self.take(8)?;
                    i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                }
                Proto::Compact => self.zigzag()?,
            }),
            TType::Double => {
                let b = self.take(8)?;
                let bits = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
                Value::Double(match self.proto {
                    Proto::Binary => f64::from_be_bytes(bits),
                    Proto::Compact => f64::from_le_bytes(bits),
                })
            }
            TType::Binary => Value::Binary(self.binary()?),
            TType::Struct => Value::Struct(self.struct_body(depth + 1)?),
            TType::List | TType::Set => {
                if depth + 1 > MAX_DEPTH {
                    return Err(DecodeError::TooDeep);
                }
                let (et, n) = self.list_begin()?;
                let mut items = Vec::with_capacity(if self.build { n } else { 0 });
                for _ in 0..n {
                    let v = self.value(et, depth + 1)?;
                    if self.build {
                        items.push(v);
                    }
                }
                Value::List(items)
            }
            TType::Map => {
                if depth + 1 > MAX_DEPTH {
                    return Err(DecodeError::TooDeep);
                }
                let (kt, vt, n) = self.map_begin()?;
                let mut items = Vec::with_capacity(if self.build { n } else { 0 });
                for _ in 0..n {
                    let k = self.value(kt, depth + 1)?;
                    let v = self.value(vt, depth + 1)?;
                    if self.build {
                        items.push((k, v));
                    }
                }
                Value::Map(items)
            }
        })
    }

    /// The fields of a struct, up to and including its stop byte.
    pub fn struct_body(&mut self, depth: usize) -> R<Vec<(i16, Value)>> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        self.last_ids.push(0);
        let mut fields = Vec::new();
        while let Some((t, id)) = self.field_begin()? {
            let v = self.value(t, depth)?;
            if self.build {
                fields.push((id, v));
            }
        }
        self.last_ids.pop();
        Ok(fields)
    }

    /// A whole message: header, then its struct.
    pub fn message(&mut self) -> R<Message> {
        let (name, kind, seqid) = self.message_begin()?;
        let body = self.struct_body(1)?;
        Ok(Message {
            name,
            kind,
            seqid,
            body,
        })
    }
}

/// The length of the complete message at the start of `buf`, found without allocating:
/// `Incomplete` if more bytes are needed. A stream read piece by piece keeps a
/// [`MessageEnd`] instead, which resumes where it stopped.
pub fn message_len(buf: &[u8], proto: Proto) -> Result<usize, DecodeError> {
    MessageEnd::new(proto)
        .advance(buf)?
        .ok_or(DecodeError::Incomplete)
}

pub use super::message_end::MessageEnd;
pub use super::writer::{encode_message, value_type, Writer};

/// Decodes one message that must fill `buf` exactly (a frame).
pub fn decode_message(buf: &[u8], proto: Proto) -> Result<Message, DecodeError> {
    let mut r = Reader::new(buf, proto);
    let m = r.message()?;
    if r.position() != buf.len() {
        return Err(r.invalid(format!(
            "{} bytes after the end of the message",
            buf.len() - r.position()
        )));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> Vec<(i16, Value)> {
        vec![
            (1, Value::Bool(true)),
            (2, Value::Bool(false)),
            (3, Value::Byte(-7)),
            (4, Value::I16(-300)),
            (5, Value::I32(i32::MIN)),
            (6, Value::I64(i64::MAX)),
            (7, Value::Double(1.5)),
            (8, Value::Binary(b"bytes\x00\xff".to_vec())),
            (
                20,
                Value::Struct(vec![(1, Value::I32(1)), (40, Value::Bool(true))]),
            ),
            (-3, Value::List((0..20).map(Value::I64).collect())),
            (21, Value::List(vec![Value::Bool(true), Value::Bool(false)])),
            (
                22,
                Value::Map(vec![(Value::Binary(b"k".to_vec()), Value::Struct(vec![]))]),
            ),
            (23, Value::Map(vec![])),
        ]
    }

    #[test]
    fn every_type_round_trips_in_both_protocols() {
        for proto in [Proto::Binary, Proto::Compact] {
            let body = every_type();
            let bytes = encode_message(proto, "getVer", CALL, 9, &body);
            assert_eq!(message_len(&bytes, proto), Ok(bytes.len()), "{proto}");
            let m = decode_message(&bytes, proto).expect("decodes");
            assert_eq!(m.name, "getVer");
            assert_eq!((m.kind, m.seqid), (CALL, 9));
            // An empty map decodes with no key/value types; compare it as written.
            assert_eq!(m.body, body, "{proto}");
            for cut in 0..bytes.len() {
                assert_eq!(
                    message_len(&bytes[..cut], proto),
                    Err(DecodeError::Incomplete),
                    "{proto} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn old_unversioned_binary_header_is_accepted() {
        let mut b = Vec::new();
        b.extend_from_slice(&6i32.to_be_bytes());
        b.extend_from_slice(b"getVer");
        b.push(CALL);
        b.extend_from_slice(&5i32.to_be_bytes());
        b.push(0);
        let m = decode_message(&b, Proto::Binary).expect("old header");
        assert_eq!((m.name.as_str(), m.kind, m.seqid), ("getVer", CALL, 5));
    }

    #[test]
    fn huge_counts_and_depth_are_refused_without_allocating() {
        // list<i32> announcing 2^31-1 elements in 10 bytes.
        let mut w = Writer::new(Proto::Binary);
        w.message_begin("m", CALL, 0);
        w.field(TType::List, 1);
        w.list_begin(TType::I32, i32::MAX as usize);
        let bytes = w.into_bytes();
        assert_eq!(
            decode_message(&bytes, Proto::Binary),
            Err(DecodeError::Incomplete)
        );
        // 100 nested lists.
        let mut w = Writer::new(Proto::Compact);
        w.message_begin("m", CALL, 0);
        w.field(TType::List, 1);
        for _ in 0..100 {
            w.list_begin(TType::List, 1);
        }
        let bytes = w.into_bytes();
        assert_eq!(
            decode_message(&bytes, Proto::Compact),
            Err(DecodeError::TooDeep)
        );
    }
}
