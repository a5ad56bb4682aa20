//! Building Thrift messages in the binary or compact protocol (replies, and requests in
//! tests). Re-exported by `protocol.rs`.

use super::protocol::{Proto, TType, Value};

/// Builds one message.
pub struct Writer {
    buf: Vec<u8>,
    proto: Proto,
    last_ids: Vec<i16>,
}

impl Writer {
    pub fn new(proto: Proto) -> Writer {
        Writer {
            buf: Vec::with_capacity(256),
            proto,
            last_ids: vec![0],
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn len_prefix(&mut self, n: usize) {
        match self.proto {
            Proto::Binary => self.buf.extend_from_slice(&(n as i32).to_be_bytes()),
            Proto::Compact => self.varint(n as u64),
        }
    }

    pub fn message_begin(&mut self, name: &str, kind: u8, seqid: i32) {
        match self.proto {
            Proto::Binary => {
                let word = 0x8001_0000u32 | u32::from(kind);
                self.buf.extend_from_slice(&word.to_be_bytes());
                self.binary(name.as_bytes());
                self.buf.extend_from_slice(&seqid.to_be_bytes());
            }
            Proto::Compact => {
                self.buf.push(0x82);
                self.buf.push((kind << 5) | 1);
                self.varint(seqid as u32 as u64);
                self.binary(name.as_bytes());
            }
        }
    }

    fn field_header(&mut self, t: TType, id: i16, compact_code: u8) {
        match self.proto {
            Proto::Binary => {
                self.buf.push(t as u8);
                self.buf.extend_from_slice(&id.to_be_bytes());
            }
            Proto::Compact => {
                let last = self.last_ids.last().copied().unwrap_or(0);
                let delta = i32::from(id) - i32::from(last);
                if (1..=15).contains(&delta) {
                    self.buf.push(((delta as u8) << 4) | compact_code);
                } else {
                    self.buf.push(compact_code);
                    self.zigzag(i64::from(id));
                }
                if let Some(l) = self.last_ids.last_mut() {
                    *l = id;
                }
            }
        }
    }

    /// A field header for a value written next (not for bools: [`Writer::field_bool`]).
    pub fn field(&mut self, t: TType, id: i16) {
        self.field_header(t, id, t.compact());
    }

    pub fn field_bool(&mut self, id: i16, v: bool) {
        match self.proto {
            Proto::Binary => {
                self.field_header(TType::Bool, id, 0);
                self.buf.push(u8::from(v));
            }
            Proto::Compact => self.field_header(TType::Bool, id, if v { 1 } else { 2 }),
        }
    }

    pub fn field_stop(&mut self) {
        self.buf.push(0);
    }

    /// Opens a struct's field scope (compact tracks field ids per struct).
    pub fn struct_begin(&mut self) {
        self.last_ids.push(0);
    }

    /// Writes the stop byte and closes the struct's scope.
    pub fn struct_end(&mut self) {
        self.field_stop();
        self.last_ids.pop();
    }

    /// A bool outside a field (a container element).
    pub fn bool(&mut self, v: bool) {
        match self.proto {
            Proto::Binary => self.buf.push(u8::from(v)),
            Proto::Compact => self.buf.push(if v { 1 } else { 2 }),
        }
    }

    pub fn byte(&mut self, v: i8) {
        self.buf.push(v as u8);
    }

    pub fn i16(&mut self, v: i16) {
        match self.proto {
            Proto::Binary => self.buf.extend_from_slice(&v.to_be_bytes()),
            Proto::Compact => self.zigzag(i64::from(v)),
        }
    }

    pub fn i32(&mut self, v: i32) {
        match self.proto {
            Proto::Binary => self.buf.extend_from_slice(&v.to_be_bytes()),
            Proto::Compact => self.zigzag(i64::from(v)),
        }
    }

    pub fn i64(&mut self, v: i64) {
        match self.proto {
            Proto::Binary => self.buf.extend_from_slice(&v.to_be_bytes()),
            Proto::Compact => self.zigzag(v),
        }
    }

    pub fn double(&mut self, v: f64) {
        match self.proto {
            Proto::Binary => self.buf.extend_from_slice(&v.to_be_bytes()),
            Proto::Compact => self.buf.extend_from_slice(&v.to_le_bytes()),
        }
    }

    pub fn binary(&mut self, v: &[u8]) {
        self.len_prefix(v.len());
        self.buf.extend_from_slice(v);
    }

    pub fn list_begin(&mut self, t: TType, n: usize) {
        match self.proto {
            Proto::Binary => {
                self.buf.push(t as u8);
                self.buf.extend_from_slice(&(n as i32).to_be_bytes());
            }
            Proto::Compact => {
                if n < 15 {
                    self.buf.push(((n as u8) << 4) | t.compact());
                } else {
                    self.buf.push(0xf0 | t.compact());
                    self.varint(n as u64);
                }
            }
        }
    }

    pub fn map_begin(&mut self, k: TType, v: TType, n: usize) {
        match self.proto {
            Proto::Binary => {
                self.buf.push(k as u8);
                self.buf.push(v as u8);
                self.buf.extend_from_slice(&(n as i32).to_be_bytes());
            }
            Proto::Compact => {
                self.varint(n as u64);
                if n > 0 {
                    self.buf.push((k.compact() << 4) | v.compact());
                }
            }
        }
    }

    /// Any value (tests and generic encoders).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Bool(b) => self.bool(*b),
            Value::Byte(b) => self.byte(*b),
            Value::I16(x) => self.i16(*x),
            Value::I32(x) => self.i32(*x),
            Value::I64(x) => self.i64(*x),
            Value::Double(x) => self.double(*x),
            Value::Binary(b) => self.binary(b),
            Value::Struct(fields) => self.struct_fields(fields),
            Value::List(items) => {
                let t = items.first().map_or(TType::Binary, value_type);
                self.list_begin(t, items.len());
                for i in items {
                    self.value(i);
                }
            }
            Value::Map(items) => {
                let (k, v) = items
                    .first()
                    .map_or((TType::Binary, TType::Binary), |(k, v)| {
                        (value_type(k), value_type(v))
                    });
                self.map_begin(k, v, items.len());
                for (k, v) in items {
                    self.value(k);
                    self.value(v);
                }
            }
        }
    }

    /// A struct made of generic fields.
    pub fn struct_fields(&mut self, fields: &[(i16, Value)]) {
        self.struct_begin();
        for (id, v) in fields {
            match v {
                Value::Bool(b) => self.field_bool(*id, *b),
                v => {
                    self.field(value_type(v), *id);
                    self.value(v);
                }
            }
        }
        self.struct_end();
    }
}

/// The wire type of a value.
pub fn value_type(v: &Value) -> TType {
    match v {
        Value::Bool(_) => TType::Bool,
        Value::Byte(_) => TType::Byte,
        Value::I16(_) => TType::I16,
        Value::I32(_) => TType::I32,
        Value::I64(_) => TType::I64,
        Value::Double(_) => TType::Double,
        Value::Binary(_) => TType::Binary,
        Value::Struct(_) => TType::Struct,
        Value::List(_) => TType::List,
        Value::Map(_) => TType::Map,
    }
}

/// Encodes a whole message (header + struct of `body`).
pub fn encode_message(
    proto: Proto,
    name: &str,
    kind: u8,
    seqid: i32,
    body: &[(i16, Value)],
) -> Vec<u8> {
    let mut w = Writer::new(proto);
    w.message_begin(name, kind, seqid);
    w.struct_fields(body);
    w.into_bytes()
}
