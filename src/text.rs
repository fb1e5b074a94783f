//! Text helpers every stage uses: short strings kept inline, and bytes read as UTF-8.

/// Short text kept inline (up to 24 bytes) instead of in its own allocation: event ids and types
/// as parsed, JSON-RPC methods, ids and progress tokens (the events of a capture are kept encoded,
/// [`crate::http::EventLog`]).
pub type Short = compact_str::CompactString;

/// `n` and the noun for that many: `1 exchange`, `2 exchanges` (`one`, `many`: its two forms).
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `bytes` as UTF-8, invalid sequences replaced by U+FFFD (as `String::from_utf8_lossy`, whose
/// chunked scan is slower on the valid text that is the norm: that is checked first, with SIMD).
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}
