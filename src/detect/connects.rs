//! Connection attempts the server refused: a client's SYN answered by a RST, with no
//! handshake and no data (RFC 9293 §3.10.7.1: a SYN to a port no one listens on is answered
//! with a reset). They are how a capture shows that a server process is gone.

use std::net::IpAddr;

use crate::tcp::FlowRow;

/// One refused connection attempt, from its flow's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedConnect {
    /// Index of the flow (`F<index>`).
    pub flow_index: usize,
    /// The client's address and port.
    pub client: (IpAddr, u16),
    /// The server's address and port.
    pub server: (IpAddr, u16),
    /// Time of the SYN, µs since the Unix epoch.
    pub ts: i64,
    /// Frame of the SYN (1-based).
    pub frame_syn: u64,
    /// Frame of the RST.
    pub frame_rst: u64,
}

impl RefusedConnect {
    /// The refused attempt `row` is: the client's SYN (which fixed the client), a RST from the
    /// server and no SYN-ACK, with no payload either way; `None` for any other flow.
    pub fn of(row: &FlowRow) -> Option<RefusedConnect> {
        let refused = row.client_by_syn
            && row.syn[0]
            && !row.syn[1]
            && row.rst[1]
            && row.wire_bytes == [0, 0];
        refused.then(|| RefusedConnect {
            flow_index: row.index,
            client: row.ends[0],
            server: row.ends[1],
            ts: row.ts_first,
            frame_syn: row.frame_first,
            frame_rst: row.frame_last,
        })
    }
}
