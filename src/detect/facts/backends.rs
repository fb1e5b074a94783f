//! Backend labels (from backend hops or response headers, [`crate::mcp::hops`]) and whether
//! two of them name different backends.

/// A backend label split into (address, name): `ip:port (name)`, `ip:port` or `name`
/// ([`crate::mcp::hops`]).
fn backend_parts(label: &str) -> (Option<&str>, Option<&str>) {
    if let Some((addr, rest)) = label.split_once(" (") {
        return (Some(addr), rest.strip_suffix(')'));
    }
    if label.parse::<std::net::SocketAddr>().is_ok() {
        (Some(label), None)
    } else {
        (None, Some(label))
    }
}

/// Whether two backend labels name different backends: names compared when both have one, else
/// addresses; a name against a bare address proves nothing.
pub(crate) fn different_backends(a: &str, b: &str) -> bool {
    let ((aa, an), (ba, bn)) = (backend_parts(a), backend_parts(b));
    match (an, bn, aa, ba) {
        (Some(x), Some(y), ..) => x != y,
        (_, _, Some(x), Some(y)) => x != y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::different_backends;

    #[test]
    fn backend_labels() {
        assert!(different_backends("b1", "b2"));
        assert!(!different_backends("b1", "127.0.0.1:3301 (b1)"));
        assert!(different_backends(
            "127.0.0.1:3301 (b1)",
            "127.0.0.1:3302 (b2)"
        ));
        assert!(different_backends("127.0.0.1:3301", "127.0.0.1:3302"));
        assert!(!different_backends("b1", "127.0.0.1:3302"));
    }
}
