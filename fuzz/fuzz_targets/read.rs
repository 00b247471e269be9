//! `pathprof_format::profile::read` on arbitrary bytes (as given, and with the integrity fields fixed up): it
//! must never panic, and whatever it accepts must survive `write` and a second `read` unchanged.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pathprof_format::profile::{read, write};

mod common;

fuzz_target!(|data: &[u8]| {
    for bytes in [data.to_vec(), common::fixup(data)] {
        if let Ok(p) = read(&bytes) {
            let again = write(&p);
            assert_eq!(read(&again).ok().as_ref(), Some(&p), "read(write(p)) != p");
        }
    }
});
