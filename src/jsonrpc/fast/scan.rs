//! A hand-written reader of one JSON-RPC message into [`Top`], ahead of the serde reader
//! ([`TopSeed`]) in [`super::classify_str`]: the same members, without serde's visitor calls,
//! and with string contents skipped by `memchr` (SIMD) instead of serde_json's eight bytes at a
//! time. Strings are most of an SSE stream's bytes.
//!
//! It answers only when it is sure to answer what [`TopSeed`] does, and returns `None` otherwise:
//! for text [`TopSeed`] rejects (the grammar of RFC 8259 §2–§7, as serde_json reads it: control
//! characters in strings, bad escapes, trailing commas or text), and for what it leaves to the
//! serde reader: `\u` escapes of surrogates that do not make a pair (serde_json rejects them),
//! escaped member names where names are compared (the message's, `params`' and `result`'s),
//! nesting deeper than [`MAX_DEPTH`], raw members with many brackets ([`super::few_brackets`]), a
//! number `params`, and a `protocolVersion` of a `result` that is not a string without escapes.
//! A number it cannot tell to be below 10^250 is checked by serde_json itself (its range
//! rules).

use smallvec::SmallVec;

use super::{Params, ResultVersion, Top};

/// Nesting (arrays and objects, the message itself included) past which the serde reader
/// decides (serde_json accepts 127 levels).
const MAX_DEPTH: u32 = 64;

/// A cursor over JSON text.
struct Scan<'a> {
    s: &'a str,
    i: usize,
}

/// Eight bytes of `c` each.
const fn splat(c: u8) -> u64 {
    u64::from_ne_bytes([c; 8])
}

/// Bytes of `w` equal to zero: the high bit of each such byte set, and of no byte below the
/// first one (higher bytes may be marked falsely, after a borrow: only the lowest mark counts).
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(splat(1)) & !w & splat(0x80)
}

/// The index of the first byte of `b[from..to]` that ends a run of plain string text (a quote,
/// a backslash or a control character, RFC 8259 §7), or `to`. Eight bytes at a time (SWAR: the
/// lowest marked byte of a word is exact; see [`zero_bytes`]), the tail of fewer one by one.
fn first_special(b: &[u8], from: usize, to: usize) -> usize {
    let mut i = from;
    while let Some(word) = b.get(i..i + 8).filter(|_| i + 8 <= to) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let marks = zero_bytes(w ^ splat(b'"'))
            | zero_bytes(w ^ splat(b'\\'))
            // Bytes below 0x20: as `zero_bytes`, with 0x20 taken off (exact below the first mark).
            | (w.wrapping_sub(splat(0x20)) & !w & splat(0x80));
        if marks != 0 {
            return i + (marks.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < to && !matches!(b[i], b'"' | b'\\' | 0..=0x1f) {
        i += 1;
    }
    i
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    /// Skips JSON whitespace (RFC 8259 §2: space, tab, LF, CR).
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Consumes `c` (after whitespace).
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string at the cursor (RFC 8259 §7): its contents between the quotes, and whether they
    /// hold an escape.
    fn string(&mut self) -> Option<(&'a str, bool)> {
        let b = self.s.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            // The next quote or backslash: the next 16 bytes eight at a time first (JSON text
            // inside a string has an escape every few bytes, and member names are short), then
            // `memchr`.
            let probe = (i + 16).min(b.len());
            i = first_special(b, i, probe);
            if i == probe {
                let rest = b.get(i..)?;
                let n = memchr::memchr2(b'"', b'\\', rest)?;
                // Control characters must be escaped. A fold, not `any`, so that it vectorises.
                if rest[..n].iter().fold(u8::MAX, |m, &c| m.min(c)) < 0x20 {
                    return None;
                }
                i += n;
            } else if b[i] < 0x20 {
                return None;
            }
            if b[i] == b'"' {
                self.i = i + 1;
                return Some((self.s.get(start..i)?, escaped));
            }
            escaped = true;
            match b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = |at: usize| {
                        b.get(at..at + 4)?
                            .iter()
                            .try_fold(0u32, |v, &h| Some(v * 16 + char::from(h).to_digit(16)?))
                    };
                    match hex(i + 2)? {
                        // A pair: a high surrogate escaped right before a low one.
                        0xD800..=0xDBFF => {
                            if b.get(i + 6..i + 8)? != b"\\u"
                                || !(0xDC00..=0xDFFF).contains(&hex(i + 8)?)
                            {
                                return None;
                            }
                            i += 12;
                        }
                        0xDC00..=0xDFFF => return None,
                        _ => i += 6,
                    }
                }
                _ => return None,
            }
        }
    }

    /// A member name compared against known names: its text, `None` when it holds an escape.
    fn name(&mut self) -> Option<&'a str> {
        self.ws();
        match self.string()? {
            (name, false) => Some(name),
            (_, true) => None,
        }
    }

    /// A number at the cursor (RFC 8259 §6). One below 10^250 (by its integer digits and an
    /// exponent of at most four digits) is in range; any other is given to serde_json, whose
    /// range rules decide (`1e400` is an error).
    fn number(&mut self) -> Option<()> {
        let b = self.s.as_bytes();
        let start = self.i;
        let mut i = start + usize::from(b.get(start) == Some(&b'-'));
        let digits = |mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = digits(i),
            _ => return None,
        }
        let int_digits = i - start - usize::from(b.get(start) == Some(&b'-'));
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        // The exponent, when it has at most four digits.
        let mut exp = Some(0i64);
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let negative = b.get(i) == Some(&b'-');
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return None;
            }
            exp = (end - i <= 4)
                .then(|| self.s.get(i..end)?.parse::<i64>().ok())
                .flatten()
                .map(|e| if negative { -e } else { e });
            i = end;
        }
        let in_range = exp.is_some_and(|e| i64::try_from(int_digits).is_ok_and(|d| d + e < 250));
        if !in_range {
            serde_json::from_str::<serde_json::Value>(self.s.get(start..i)?).ok()?;
        }
        self.i = i;
        Some(())
    }

    /// Any value (after whitespace), checked; `depth` is its own level, the message's being 0
    /// (a container opened at [`MAX_DEPTH`] is left to the serde reader).
    fn value(&mut self, depth: u32) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.open(depth)?;
                if self.close(b'}') {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.string()?;
                    self.eat(b':')?;
                    self.value(depth + 1)?;
                    if self.next_or_close(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                self.open(depth)?;
                if self.close(b']') {
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    if self.next_or_close(b']')? {
                        return Some(());
                    }
                }
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    /// Steps into a container at `depth`.
    fn open(&mut self, depth: u32) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.i += 1;
        Some(())
    }

    /// Consumes `c` if it comes next (after whitespace): an empty container.
    fn close(&mut self, c: u8) -> bool {
        self.ws();
        let closed = self.peek() == Some(c);
        self.i += usize::from(closed);
        closed
    }

    /// After a member or element: `,` (`false`: another follows) or the closing `c` (`true`).
    fn next_or_close(&mut self, c: u8) -> Option<bool> {
        self.ws();
        let next = self.peek()?;
        self.i += 1;
        match next {
            b',' => Some(false),
            n if n == c => Some(true),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.s.get(self.i..)?.starts_with(word).then(|| {
            self.i += word.len();
        })
    }

    /// A value (after whitespace), checked, as raw text: what serde_json's `RawValue` holds.
    fn raw(&mut self, depth: u32) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.value(depth)?;
        let raw = self.s.get(start..self.i)?;
        // The serde reader's check of raw members ([`super::valid`]) counts them too.
        super::few_brackets(raw).then_some(raw)
    }

    /// The members of an object at `depth` (after whitespace), each name given to `member`
    /// with the cursor before its value; `member` consumes the value.
    fn members(
        &mut self,
        depth: u32,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.ws();
        if self.peek()? != b'{' {
            return None;
        }
        self.open(depth)?;
        if self.close(b'}') {
            return Some(());
        }
        loop {
            let name = self.name()?;
            self.eat(b':')?;
            member(self, name)?;
            if self.next_or_close(b'}')? {
                return Some(());
            }
        }
    }
}

/// [`TopSeed`](super::TopSeed) on `text` (trimmed JSON whitespace, starting with `{`), with the
/// members `keys` of `params`: `Some` only where that reader gives the same `Top`.
pub(super) fn top<'a>(text: &'a str, keys: &[std::borrow::Cow<str>]) -> Option<Top<'a>> {
    let mut sc = Scan { s: text, i: 0 };
    let mut t = Top::default();
    sc.members(0, |sc, name| {
        match name {
            "method" => t.method = Some(sc.raw(1)?),
            "id" => t.id = Some(sc.raw(1)?),
            "params" => {
                sc.ws();
                let start = sc.i;
                t.params = Some(params(sc, keys)?);
                t.params_text = text.get(start..sc.i);
            }
            "result" => t.result = Some(result(sc)?),
            "error" => t.error = Some(sc.raw(1)?),
            _ => sc.value(1)?,
        }
        Some(())
    })?;
    (sc.i == text.len()).then_some(t)
}

/// `params`: an object's members `keys` as raw text (the last of each), or an array, string,
/// boolean or null. A number is left to the serde reader.
fn params<'a>(sc: &mut Scan<'a>, keys: &[std::borrow::Cow<str>]) -> Option<Params<'a>> {
    sc.ws();
    match sc.peek()? {
        b'{' => {
            let mut out: SmallVec<[Option<&'a str>; 12]> = smallvec::smallvec![None; keys.len()];
            sc.members(1, |sc, name| {
                match keys.iter().position(|k| k == name) {
                    Some(i) => out[i] = Some(sc.raw(2)?),
                    None => sc.value(2)?,
                }
                Some(())
            })?;
            Some(Params::Object(out))
        }
        b'[' => sc.value(1).map(|()| Params::Array),
        b'"' | b't' | b'f' | b'n' => sc.value(1).map(|()| Params::Other),
        _ => None,
    }
}

/// `result`, with its `protocolVersion` member (the last) when that is a string without
/// escapes; any other `protocolVersion` is left to the serde reader.
fn result(sc: &mut Scan<'_>) -> Option<ResultVersion> {
    sc.ws();
    if sc.peek()? != b'{' {
        return sc.value(1).map(|()| ResultVersion(None));
    }
    let mut version = None;
    sc.members(1, |sc, name| {
        if name == "protocolVersion" {
            sc.ws();
            match sc.string()? {
                (v, false) => version = Some(serde_json::Value::String(v.to_string())),
                (_, true) => return None,
            }
        } else {
            sc.value(2)?;
        }
        Some(())
    })?;
    Some(ResultVersion(version))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]
        /// The eight-at-a-time search finds what a byte-by-byte one does, wherever the run starts
        /// and ends, with specials (and bytes next to them: 0x1f/0x20, 0x21/0x23, 0x80..) anywhere.
        #[test]
        fn first_special_is_the_first(
            b in prop::collection::vec(prop::sample::select(vec![
                b'a', b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa0, 0xff,
            ]), 0..40),
            from in 0usize..40,
            len in 0usize..40,
        ) {
            let from = from.min(b.len());
            let to = (from + len).min(b.len());
            let naive = (from..to)
                .find(|&k| matches!(b[k], b'"' | b'\\' | 0..=0x1f))
                .unwrap_or(to);
            prop_assert_eq!(super::first_special(&b, from, to), naive);
        }
    }
}
