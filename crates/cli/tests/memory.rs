//! Memory under concurrent large reads, through the binary (issue 23): N clients each reading
//! the same S-byte file with `resourceRead` at once must keep the serve process's peak resident
//! memory (`VmHWM`) under the cap the server documents
//! (`agenthost_services::resources::read_memory_cap`): reads are bounded, not all in memory at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::{Peer, Place, Server, runtime};

/// `VmHWM` (peak resident set) of process `pid`, in bytes.
fn peak_resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn concurrent_large_reads_stay_under_the_documented_cap() {
    const READERS: usize = 30;
    // The largest file the host reads; its base64 answer (21 MiB) goes out in 1 MiB frames,
    // under the 16 MiB frame limit of common clients.
    const SIZE: usize = 16 * 1024 * 1024;
    let place = Place::new();
    // Not UTF-8, so the answer is base64 (the larger encoding).
    let bytes: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8 | 0x80).collect();
    let file = place.work.join("big.bin");
    std::fs::write(&file, &bytes).unwrap();
    let uri = agenthost_protocol::uri::path_to_file_uri(&file.canonicalize().unwrap()).unwrap();
    let server = Server::start(&place, None);
    let pid = server.process.pid();
    let before = peak_resident(pid);
    runtime().block_on(async {
        let mut reads = tokio::task::JoinSet::new();
        for n in 0..READERS {
            let url = server.url.clone();
            let uri = uri.clone();
            reads.spawn(async move {
                let peer = Peer::connect(&url, &format!("reader-{n}")).await;
                let answer = peer
                    .request(
                        "resourceRead",
                        json!({ "channel": "ahp-root://", "uri": uri, "encoding": "base64" }),
                    )
                    .await
                    .unwrap();
                assert_eq!(answer["encoding"], "base64");
                answer["data"].as_str().unwrap().len()
            });
        }
        while let Some(read) = reads.join_next().await {
            assert_eq!(read.unwrap(), SIZE.div_ceil(3) * 4);
        }
    });
    let peak = peak_resident(pid);
    let cap = before + agenthost_services::resources::read_memory_cap(SIZE as u64);
    eprintln!(
        "memory: {READERS} concurrent reads of {} MiB: peak resident {} MiB (at start {} MiB, cap {} MiB)",
        SIZE >> 20,
        peak >> 20,
        before >> 20,
        cap >> 20
    );
    assert!(
        peak <= cap,
        "peak resident {peak} bytes is over the cap {cap}"
    );
    server.process.terminate();
}
