//! JSON-RPC classification: wherever the fast paths (the hand-written reader, then the serde
//! reader, element by element for a batch) answer, they answer what the general
//! `serde_json::Value` path does; what that path rejects they reject, but for nesting past
//! serde_json's limit, which is read from the top-level members (and said to be too deep).
//! A bound on a batch keeps its first elements.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let pointers = ["/params/app_seq".to_string(), "/params/a~1b".to_string()];
    let general = mcpcap::jsonrpc::parse_value(data, &pointers);
    let ours = mcpcap::jsonrpc::parse(data, &pointers);
    match (&general, &ours) {
        (Ok(g), Ok(o)) => assert_eq!(g, o),
        (Err(_), Err(_)) => {}
        (Err(e), Ok(_)) => assert!(e.starts_with("recursion limit exceeded"), "{e}"),
        (Ok(_), Err(e)) => panic!("rejected what serde_json reads: {e}"),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(all) = &ours {
            let max = data.len() % 5;
            let b = mcpcap::jsonrpc::parse_bounded(text, &pointers, max).expect("read once");
            let kept = if b.batch { all.len().min(max) } else { all.len() };
            assert_eq!(b.messages.to_vec(), all[..kept].to_vec());
            assert_eq!(b.messages.len() + b.dropped, all.len());
        }
    }
});
