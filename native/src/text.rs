//! The text rules of kop's reserved properties, as CPython 3.11 applies them:
//! `base64.b64encode`, `base64.b64decode(validate=True)` (binascii's strict
//! mode), `json.dumps` of the header list (default separators, ensure_ascii),
//! `json.loads` of it as `formats._json_headers` accepts it, and `int()`.

use std::borrow::Cow;

// -- base64 -------------------------------------------------------------------

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const fn decode_table() -> [u8; 256] {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 64 {
        t[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    t
}

static DECODE: [u8; 256] = decode_table();

pub fn b64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// `base64.b64encode`: standard alphabet, padded.
pub fn b64_encode(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(b64_len(data.len()));
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        out.extend_from_slice(&[
            ALPHABET[(n >> 18) as usize & 63],
            ALPHABET[(n >> 12) as usize & 63],
            ALPHABET[(n >> 6) as usize & 63],
            ALPHABET[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                b'=',
                b'=',
            ]);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                ALPHABET[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// `base64.b64decode(s, validate=True)` of CPython 3.11, i.e.
/// `binascii.a2b_base64(s, strict_mode=True)`: only alphabet characters, no
/// leading '=', nothing but '=' once padding started, nothing after the pad that
/// completes a quad, no incomplete quad; padding after a complete quad is
/// ignored ("QUJD=" decodes), and so are non-zero trailing bits ("QR==").
/// `None` where Python raises (binascii.Error or, for a non-ASCII str, ValueError).
pub fn b64_decode(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 3);
    let mut quad_pos = 0u8;
    let mut pads = 0u8;
    let mut left = 0u32;
    let mut padding = false;
    if data.first() == Some(&b'=') {
        return None;
    }
    for (i, &c) in data.iter().enumerate() {
        if c == b'=' {
            padding = true;
            if quad_pos >= 2 {
                pads += 1;
                if quad_pos + pads >= 4 {
                    return if i + 1 < data.len() { None } else { Some(out) };
                }
            }
            continue;
        }
        let v = DECODE[c as usize];
        if v == 0xff || padding {
            return None;
        }
        let v = u32::from(v);
        pads = 0;
        match quad_pos {
            0 => {
                left = v;
                quad_pos = 1;
            }
            1 => {
                out.push(((left << 2) | (v >> 4)) as u8);
                left = v & 0x0f;
                quad_pos = 2;
            }
            2 => {
                out.push(((left << 4) | (v >> 2)) as u8);
                left = v & 0x03;
                quad_pos = 3;
            }
            _ => {
                out.push(((left << 6) | v) as u8);
                left = 0;
                quad_pos = 0;
            }
        }
    }
    if quad_pos != 0 {
        None
    } else {
        Some(out)
    }
}

// -- JSON ----------------------------------------------------------------------

/// `json.dumps(s)` of one str: ensure_ascii, so every character outside
/// ' '..'~' is `\uXXXX` (lower-case hex; a surrogate pair above the BMP), with
/// the short escapes for `" \ \n \r \t \b \f`.
fn json_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let plain = |b: u8| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\';
    if bytes.iter().all(|&b| plain(b)) {
        out.extend_from_slice(bytes);
    } else {
        for ch in s.chars() {
            match ch {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\u{8}' => out.extend_from_slice(b"\\b"),
                '\u{c}' => out.extend_from_slice(b"\\f"),
                ' '..='~' => out.push(ch as u8),
                _ => {
                    let mut units = [0u16; 2];
                    for u in ch.encode_utf16(&mut units) {
                        const HEX: &[u8; 16] = b"0123456789abcdef";
                        out.extend_from_slice(b"\\u");
                        for shift in [12, 8, 4, 0] {
                            out.push(HEX[usize::from((*u >> shift) & 0xf)]);
                        }
                    }
                }
            }
        }
    }
    out.push(b'"');
}

/// `json.dumps([[k, None if v is None else b64encode(v).decode()] for k, v in headers])`.
pub fn json_headers_dump<'h>(
    headers: impl Iterator<Item = (&'h str, Option<&'h [u8]>)>,
    out: &mut Vec<u8>,
) {
    out.push(b'[');
    for (i, (k, v)) in headers.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.push(b'[');
        json_str(k, out);
        out.extend_from_slice(b", ");
        match v {
            None => out.extend_from_slice(b"null"),
            Some(v) => {
                out.push(b'"');
                b64_encode(v, out);
                out.push(b'"');
            }
        }
        out.push(b']');
    }
    out.push(b']');
}

pub type JsonHeader<'a> = (Cow<'a, str>, Option<Vec<u8>>);

struct Json<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Json<'a> {
    /// json's whitespace: space, \t, \n, \r only.
    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while self.pos < b.len() && matches!(b[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        if self.s.as_bytes().get(self.pos) == Some(&c) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.s.as_bytes().get(at..at + 4)?;
        let mut v = 0u32;
        for &c in h {
            v = (v << 4) | (c as char).to_digit(16)?;
        }
        Some(v)
    }

    /// A JSON string as json's strict scanner reads it, after the opening quote.
    /// `None` also for a surrogate escape that is not half of a pair: Python
    /// keeps it, but no header list can hold it (`k.encode()` and base64 fail).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let b = self.s.as_bytes();
        let start = self.pos;
        // the common case: no escapes
        while self.pos < b.len() {
            match b[self.pos] {
                b'"' => {
                    let out = &self.s[start..self.pos];
                    self.pos += 1;
                    return Some(Cow::Borrowed(out));
                }
                b'\\' => break,
                c if c < 0x20 => return None,
                _ => self.pos += 1,
            }
        }
        let mut out = String::from(&self.s[start..self.pos]);
        loop {
            let c = *b.get(self.pos)?;
            match c {
                b'"' => {
                    self.pos += 1;
                    return Some(Cow::Owned(out));
                }
                c if c < 0x20 => return None,
                b'\\' => {
                    let e = *b.get(self.pos + 1)?;
                    self.pos += 2;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let u = self.hex4(self.pos)?;
                            self.pos += 4;
                            if (0xd800..0xdc00).contains(&u) {
                                if b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return None;
                                }
                                let lo = self.hex4(self.pos + 2)?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return None;
                                }
                                self.pos += 6;
                                char::from_u32(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00))?
                            } else {
                                char::from_u32(u)? // None for a lone low surrogate
                            }
                        }
                        _ => return None,
                    };
                    out.push(ch);
                }
                _ => {
                    // copy a run of plain characters (UTF-8 continuation bytes included)
                    let run = self.pos;
                    while self.pos < b.len()
                        && !matches!(b[self.pos], b'"' | b'\\')
                        && b[self.pos] >= 0x20
                    {
                        self.pos += 1;
                    }
                    out.push_str(&self.s[run..self.pos]);
                }
            }
        }
    }

    /// One `[key, base64 value or null]`, after its opening bracket.
    fn item(&mut self) -> Option<JsonHeader<'a>> {
        self.ws();
        self.eat(b'"')?;
        let key = self.string()?;
        self.ws();
        self.eat(b',')?;
        self.ws();
        let value = if self.s.as_bytes()[self.pos..].starts_with(b"null") {
            self.pos += 4;
            None
        } else {
            self.eat(b'"')?;
            let v = self.string()?;
            if !v.is_ascii() {
                return None; // b64decode of a str wants ASCII
            }
            Some(b64_decode(v.as_bytes())?)
        };
        self.ws();
        self.eat(b']')?;
        Some((key, value))
    }
}

/// `formats._json_headers`: the headers if `text` is a JSON list of
/// `[str, base64 str or null]` pairs that `json.loads` accepts and whose keys
/// encode as UTF-8 and values decode; `None` otherwise. Anything else JSON can
/// say (numbers, objects, deeper lists, NaN, ...) is not of that shape, so this
/// reads only the shape and rejects the rest.
pub fn json_headers_load(text: &str) -> Option<Vec<JsonHeader<'_>>> {
    let mut p = Json { s: text, pos: 0 };
    let mut out = Vec::new();
    p.ws();
    p.eat(b'[')?;
    p.ws();
    if p.eat(b']').is_none() {
        loop {
            p.eat(b'[')?;
            out.push(p.item()?);
            p.ws();
            if p.eat(b']').is_some() {
                break;
            }
            p.eat(b',')?;
            p.ws();
        }
    }
    p.ws();
    if p.pos != text.len() {
        return None;
    }
    Some(out)
}

// -- int() ---------------------------------------------------------------------

/// What `int(text)` gives: an error, or a value (huge ones saturated; every
/// range kop checks is within +-2^63).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PyInt {
    Invalid,
    Value(i128),
}

const SATURATE: i128 = 1 << 100;

/// Above this many digits CPython consults `sys.get_int_max_str_digits()`.
const DIGITS_THRESHOLD: usize = 640;

/// `int(text)` for ASCII text of at most 640 digits: C-locale whitespace around,
/// an optional sign, decimal digits with single underscores between them. For
/// anything else (non-ASCII: Unicode digits and spaces; longer: the digit limit)
/// `fallback` asks Python itself.
pub fn py_int(text: &str, fallback: &mut dyn FnMut(&str) -> PyInt) -> PyInt {
    let b = text.as_bytes();
    if !text.is_ascii() {
        return fallback(text);
    }
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let mut i = 0;
    let mut j = b.len();
    while i < j && space(b[i]) {
        i += 1;
    }
    while j > i && space(b[j - 1]) {
        j -= 1;
    }
    let mut body = &b[i..j];
    let negative = match body.first() {
        Some(b'-') => {
            body = &body[1..];
            true
        }
        Some(b'+') => {
            body = &body[1..];
            false
        }
        _ => false,
    };
    if body.is_empty() || !body[0].is_ascii_digit() || !body[body.len() - 1].is_ascii_digit() {
        return PyInt::Invalid;
    }
    let mut value: i128 = 0;
    let mut digits = 0usize;
    let mut underscore = false;
    for &c in body {
        if c == b'_' {
            if underscore {
                return PyInt::Invalid;
            }
            underscore = true;
            continue;
        }
        if !c.is_ascii_digit() {
            return PyInt::Invalid;
        }
        underscore = false;
        digits += 1;
        value = (value * 10 + i128::from(c - b'0')).min(SATURATE);
    }
    if digits > DIGITS_THRESHOLD {
        return fallback(text);
    }
    PyInt::Value(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_fallback(_: &str) -> PyInt {
        panic!("fallback")
    }

    #[test]
    fn ints() {
        let f = &mut no_fallback;
        assert_eq!(py_int(" 1_000\n", f), PyInt::Value(1000));
        assert_eq!(py_int("-0", f), PyInt::Value(0));
        assert_eq!(py_int("1__0", f), PyInt::Invalid);
        assert_eq!(py_int("\x1c1", f), PyInt::Invalid);
        assert_eq!(py_int("- 1", f), PyInt::Invalid);
    }

    #[test]
    fn base64() {
        assert_eq!(b64_decode(b"QUJD="), Some(b"ABC".to_vec()));
        assert_eq!(b64_decode(b"QR=="), Some(b"A".to_vec()));
        assert_eq!(b64_decode(b"QQ="), None);
        assert_eq!(b64_decode(b"QQ==="), None);
        let mut out = Vec::new();
        b64_encode(b"\xff\x00", &mut out);
        assert_eq!(out, b"/wA=");
    }

    #[test]
    fn json() {
        let mut out = Vec::new();
        json_headers_dump(
            [("\u{7f}é😀\"", None), ("a", Some(&b"a"[..]))].into_iter(),
            &mut out,
        );
        assert_eq!(
            out,
            br#"[["\u007f\u00e9\ud83d\ude00\"", null], ["a", "YQ=="]]"#
        );
        let h = json_headers_load(r#" [["a", "YQ=="], ["\ud83d\ude00", null]] "#).unwrap();
        assert_eq!(h[0].1.as_deref(), Some(&b"a"[..]));
        assert_eq!(h[1].0, "😀");
        assert!(json_headers_load(r#"[["\ud800", null]]"#).is_none());
        assert!(json_headers_load(r#"[["a", null],]"#).is_none());
    }
}
