//! Shared by the fuzz targets: make mutated bytes get past the cheap integrity checks, so the fuzzer spends its
//! time in the record, metadata and count logic rather than on checksum mismatches.

use pathprof_format::layout::{fnv1a64, FileHeader, RecordHeader, FILE_HEADER_LEN, RECORD_HEADER_LEN};
use pathprof_format::meta::ModuleMeta;

/// `bytes` with the header's `payload_len` and checksum recomputed and, for every record that can be located,
/// `meta_hash` (and `name_hash`, when the metadata decodes) recomputed. Bytes that are not even a header are
/// returned unchanged.
pub fn fixup(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let Some(head) = b.first_chunk::<FILE_HEADER_LEN>() else { return b };
    let Some(mut h) = FileHeader::decode(head) else { return b };
    let mut at = FILE_HEADER_LEN;
    for _ in 0..h.num_modules.min(64) {
        let Some(rh) = b.get(at..).and_then(|r| r.first_chunk::<RECORD_HEADER_LEN>()) else { break };
        let mut rh = RecordHeader::decode(rh);
        let meta_at = at + RECORD_HEADER_LEN;
        let Some(meta_end) = usize::try_from(rh.meta_len).ok().and_then(|l| meta_at.checked_add(l)) else { break };
        let Some(meta) = b.get(meta_at..meta_end) else { break };
        rh.meta_hash = fnv1a64(meta);
        if let Ok(m) = ModuleMeta::decode(meta) {
            rh.name_hash = m.name_hash();
        }
        b[at..at + RECORD_HEADER_LEN].copy_from_slice(&rh.encode());
        let Some(next) = usize::try_from(rh.record_len).ok().and_then(|l| at.checked_add(l)) else { break };
        if next <= at || next > b.len() {
            break;
        }
        at = next;
    }
    let payload = &b[FILE_HEADER_LEN..];
    h.payload_len = payload.len() as u64;
    h.checksum = fnv1a64(payload);
    // encode() keeps the magic and writes the reserved word as 0; keep the input's reserved word.
    let mut enc = h.encode();
    enc[20..24].copy_from_slice(&b[20..24]);
    b[..FILE_HEADER_LEN].copy_from_slice(&enc);
    b
}
