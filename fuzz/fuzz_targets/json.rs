//! JSON-RPC classification: wherever the fast paths (the hand-written reader, then the serde
//! reader) answer, they answer what the general `serde_json::Value` path does; what that path
//! rejects, they reject.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let pointers = ["/params/app_seq".to_string(), "/params/a~1b".to_string()];
    let general = mcpcap::jsonrpc::parse_value(data, &pointers);
    assert_eq!(mcpcap::jsonrpc::parse(data, &pointers), general);
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(
            mcpcap::jsonrpc::parse_str(text, &pointers).map(|m| m.to_vec()),
            general
        );
    }
});
