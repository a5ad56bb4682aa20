//! Query strings and path segments as bytes: REST row keys may be any bytes, so values are
//! percent-decoded to bytes (not to UTF-8 strings). A `NAME_b64` parameter gives the same
//! value in base64 instead.

use base64::Engine;

use super::ApiError;

/// A request's query parameters in order, names as text, values as bytes.
pub struct Query(Vec<(String, Vec<u8>)>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Result<Query, ApiError> {
        let mut params = Vec::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = String::from_utf8(percent_decode(name, true)?).map_err(|_| {
                ApiError::BadRequest(format!("query parameter name {name:?} is not UTF-8"))
            })?;
            params.push((name, percent_decode(value, true)?));
        }
        Ok(Query(params))
    }

    /// Every value of `name`, or of `name_b64` decoded, in order.
    pub fn all(&self, name: &str) -> Result<Vec<Vec<u8>>, ApiError> {
        let b64 = format!("{name}_b64");
        let mut out = Vec::new();
        for (n, v) in &self.0 {
            if n == name {
                out.push(v.clone());
            } else if *n == b64 {
                out.push(decode_b64(&b64, v)?);
            }
        }
        Ok(out)
    }

    /// The last value of `name` (or `name_b64`).
    pub fn bytes(&self, name: &str) -> Result<Option<Vec<u8>>, ApiError> {
        Ok(self.all(name)?.pop())
    }

    /// The last value of `name` as text.
    pub fn text(&self, name: &str) -> Result<Option<String>, ApiError> {
        self.bytes(name)?
            .map(|v| {
                String::from_utf8(v).map_err(|_| {
                    ApiError::BadRequest(format!("query parameter {name:?} is not UTF-8"))
                })
            })
            .transpose()
    }

    /// The last value of `name` as a number.
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        self.text(name)?
            .map(|t| {
                t.parse().map_err(|_| {
                    ApiError::BadRequest(format!(
                        "query parameter {name}={t:?} is not a valid number"
                    ))
                })
            })
            .transpose()
    }

    /// A flag: present without a value, or `true`/`1`.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.text(name)?.as_deref() {
            None | Some("false") | Some("0") => Ok(false),
            Some("") | Some("true") | Some("1") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!(
                "query parameter {name}={other:?} must be true or false"
            ))),
        }
    }
}

pub fn decode_b64(what: &str, text: &[u8]) -> Result<Vec<u8>, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| ApiError::BadRequest(format!("{what} is not valid base64: {e}")))
}

/// `%XX` escapes to bytes (and `+` to a space in query strings).
pub fn percent_decode(s: &str, plus_is_space: bool) -> Result<Vec<u8>, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!("bad percent escape at byte {i} of {s:?}"))
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bytes_and_b64_is_an_alternative() {
        let q = Query::parse(Some("row=a%FFb&row_b64=AAE%3D&limit=5&x+y=1+2&flag")).unwrap();
        assert_eq!(q.all("row").unwrap(), vec![b"a\xffb".to_vec(), vec![0, 1]]);
        assert_eq!(q.number::<u64>("limit").unwrap(), Some(5));
        assert_eq!(q.bytes("x y").unwrap(), Some(b"1 2".to_vec()));
        assert!(q.flag("flag").unwrap());
        assert!(q.number::<u64>("row").is_err());
        assert!(Query::parse(Some("a=%G1")).is_err());
        assert!(Query::parse(Some("a=%4")).is_err());
    }
}
