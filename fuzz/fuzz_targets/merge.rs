//! `pathprof_format::profile::merge`: the input is two profiles (split at a position given by its first two
//! bytes), each fixed up; merging them, and a profile with itself, must never panic, and a successful merge
//! must write and read back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pathprof_format::profile::{merge, read, write};

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((split, rest)) = data.split_first_chunk::<2>() else { return };
    let at = usize::from(u16::from_le_bytes(*split)).min(rest.len());
    let (a, b) = rest.split_at(at);
    let pa = read(&common::fixup(a));
    let pb = read(&common::fixup(b));
    let mut inputs = Vec::new();
    inputs.extend(pa.ok());
    inputs.extend(pb.ok());
    if inputs.is_empty() {
        return;
    }
    for set in [&inputs[..], &[inputs[0].clone(), inputs[0].clone()][..]] {
        if let Ok(m) = merge(set) {
            assert!(read(&write(&m)).is_ok(), "a merged profile does not read back");
        }
    }
});
