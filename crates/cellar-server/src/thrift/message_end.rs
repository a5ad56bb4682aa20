//! Where an unframed message ends, found as its bytes arrive.
//!
//! With the buffered transport a message carries no length: the gateway knows it holds a
//! whole call only by walking it. A walk restarted from the first byte at every read costs
//! quadratic time when a large request arrives in many small writes (happybase writes a
//! `mutateRows` of 1000 rows in 4 KiB pieces), and waiting for the sender to pause before
//! walking again costs the waiting client that pause on every request whose last piece is
//! small. So the walk keeps its place: [`MessageEnd::advance`] resumes after the last value
//! it finished, and each byte is walked once, plus the start of the one value it found cut
//! short. The walk is iterative (an explicit stack of open structs and containers), with
//! the reader's own checks: the same depth and value limits, counts checked against the
//! bytes present, nothing allocated for what it skips.

use super::protocol::{DecodeError, Proto, Reader, TType, MAX_DEPTH};

/// A struct or container the walk is inside.
#[derive(Debug, Clone, Copy)]
enum Open {
    Struct,
    /// A list or set, with the elements still to come.
    List {
        elem: TType,
        left: usize,
    },
    /// A map, with the pairs still to come; `key_next`: the next value is a key.
    Map {
        key: TType,
        value: TType,
        left: usize,
        key_next: bool,
    },
}

/// The walk over one unframed message, resumable as more of its bytes arrive.
#[derive(Debug)]
pub struct MessageEnd {
    proto: Proto,
    /// Where the next step starts: the end of the last whole value (or header).
    pos: usize,
    header_read: bool,
    /// Open structs and containers, outermost first (the argument struct at the bottom).
    /// Field ids are not kept: the walk needs none, and none changes where a message ends.
    open: Vec<Open>,
    /// Values walked so far, against [`super::protocol::MAX_VALUES`].
    values: usize,
}

impl MessageEnd {
    pub fn new(proto: Proto) -> MessageEnd {
        MessageEnd {
            proto,
            pos: 0,
            header_read: false,
            open: Vec::new(),
            values: 0,
        }
    }

    /// Walks on through `buf`, which holds the bytes given before plus any that arrived
    /// since: `Some(len)` once the message is whole (its first `len` bytes), `None` while
    /// it needs more.
    pub fn advance(&mut self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        let mut r = Reader::measuring(buf, self.proto);
        r.resume(self.pos, self.values);
        let result = loop {
            let mark = r.mark();
            match self.step(&mut r) {
                Ok(true) => break Ok(Some(r.position())),
                Ok(false) => {}
                Err(DecodeError::Incomplete) => {
                    r.rewind(mark);
                    break Ok(None);
                }
                Err(e) => break Err(e),
            }
        };
        (self.pos, self.values) = r.suspend();
        result
    }

    /// One step: the header, a field, an element, a key or value, or a close. Changes
    /// `open` only once the step's bytes are all there. `true` when the message ended.
    fn step(&mut self, r: &mut Reader<'_>) -> Result<bool, DecodeError> {
        if !self.header_read {
            r.message_begin()?;
            self.open_struct()?;
            self.header_read = true;
            return Ok(false);
        }
        let Some(top) = self.open.len().checked_sub(1) else {
            return Ok(true);
        };
        match self.open[top] {
            Open::Struct => match r.field_begin()? {
                None => {
                    self.open.pop();
                }
                Some((t, _id)) => self.value(r, t)?,
            },
            Open::List { left: 0, .. } | Open::Map { left: 0, .. } => {
                self.open.pop();
            }
            Open::List { elem, left } => {
                self.value(r, elem)?;
                self.open[top] = Open::List {
                    elem,
                    left: left - 1,
                };
            }
            Open::Map {
                key,
                value,
                left,
                key_next,
            } => {
                self.value(r, if key_next { key } else { value })?;
                self.open[top] = Open::Map {
                    key,
                    value,
                    left: if key_next { left } else { left - 1 },
                    key_next: !key_next,
                };
            }
        }
        Ok(self.open.is_empty())
    }

    /// A value of type `t`: read whole if it is a scalar, opened if it holds others. The
    /// checks come in the recursive reader's order (value count, depth, then the bytes).
    fn value(&mut self, r: &mut Reader<'_>, t: TType) -> Result<(), DecodeError> {
        let depth = self.open.len();
        match t {
            TType::Struct => {
                r.count_value()?;
                self.open_struct()
            }
            TType::List | TType::Set => {
                r.count_value()?;
                self.check_depth()?;
                let (elem, left) = r.list_begin()?;
                self.open.push(Open::List { elem, left });
                Ok(())
            }
            TType::Map => {
                r.count_value()?;
                self.check_depth()?;
                let (key, value, left) = r.map_begin()?;
                self.open.push(Open::Map {
                    key,
                    value,
                    left,
                    key_next: true,
                });
                Ok(())
            }
            scalar => r.value(scalar, depth).map(drop),
        }
    }

    fn open_struct(&mut self) -> Result<(), DecodeError> {
        self.check_depth()?;
        self.open.push(Open::Struct);
        Ok(())
    }

    /// A struct or container opened now would be one level deeper than those open.
    fn check_depth(&self) -> Result<(), DecodeError> {
        if self.open.len() + 1 > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thrift::protocol::{encode_message, Value, CALL};

    #[test]
    fn a_large_request_in_small_pieces_is_walked_once() {
        let rows: Vec<Value> = (0..1000)
            .map(|i| {
                Value::Struct(vec![
                    (1, Value::Binary(format!("row{i}").into_bytes())),
                    (2, Value::List(vec![Value::Struct(vec![]); 1])),
                ])
            })
            .collect();
        let body = vec![(2, Value::List(rows))];
        let bytes = encode_message(Proto::Binary, "mutateRows", CALL, 1, &body);
        let mut end = MessageEnd::new(Proto::Binary);
        let mut walked_from = Vec::new();
        for cut in (0..bytes.len()).step_by(97) {
            walked_from.push(end.pos);
            assert_eq!(end.advance(&bytes[..cut]), Ok(None));
        }
        assert_eq!(end.advance(&bytes), Ok(Some(bytes.len())));
        // Each call starts where the last one stopped, never back at the start.
        assert!(walked_from.windows(2).all(|w| w[0] <= w[1]));
        assert!(*walked_from.last().unwrap_or(&0) > bytes.len() - 200);
    }
}
