//! Two descriptors held for writing the profile.
//!
//! A dump opens the lock file and then the profile or its temporary file: two descriptors at once, at exit. A
//! program that has used up its descriptors by then lost its whole profile, with one warning (GNU make's test of
//! a makefile that includes itself until `fopen` fails with `EMFILE`, under `ulimit -n 128`). So the counting
//! runtime holds both ends of a pipe from its first registration, out of the program's way
//! ([`Fd::out_of_the_way`]), closes them right before a dump opens its files and holds a new pair after it.
//! The price: a program can open two descriptors fewer than its limit allows (per runtime copy). Trace mode, which holds its file
//! from the start, holds one more from this reserve, so that a program runs alike at its limit in every mode
//! and the modes' counts of one run agree (make's include loop ran once more in trace mode than in edge mode).
//! Where the limit leaves no room out of the way (under 128), nothing is held: low descriptors are
//! the program's (tests check which ones a child inherits). A program that closes descriptors it did not open
//! may reuse the numbers, so a held descriptor is closed only while it is still the reserve's pipe (its device
//! and inode); otherwise it is forgotten. Not covered: a program that lowers its limit below the descriptors it
//! has open (libevent's `listener/error_unlock`), where no descriptor freed high up can be had again.

use crate::sys::Fd;

/// The lowest descriptor a held end may sit on: [`Fd::out_of_the_way`] places it at 64 or higher when the
/// limit allows.
const OUT_OF_THE_WAY: libc::c_int = 64;

/// The held pipe: each end with the identity (device, inode) it had when taken.
pub(crate) struct Reserve {
    held: [Option<(Fd, (u64, u64))>; 2],
}

impl Reserve {
    pub(crate) const fn new() -> Reserve {
        Reserve { held: [None, None] }
    }

    /// Takes `ends` (1 or 2) descriptors of a new pipe, out of the program's way, unless some are held already
    /// or there is no room.
    pub(crate) fn hold(&mut self, ends: usize) {
        if self.held.iter().any(Option::is_some) {
            return;
        }
        let Ok((read, write)) = Fd::pipe() else { return };
        let fds = [read.out_of_the_way(), write.out_of_the_way()];
        if fds.iter().any(|fd| fd.raw() < OUT_OF_THE_WAY) {
            return; // both closed on drop
        }
        for (slot, fd) in self.held.iter_mut().zip(fds).take(ends) {
            let id = fd.identity();
            *slot = Some((fd, id));
        }
    }

    /// Frees the held descriptors for the files a dump is about to open.
    pub(crate) fn release(&mut self) {
        for slot in &mut self.held {
            if let Some((fd, id)) = slot.take() {
                if fd.identity() == id {
                    drop(fd);
                } else {
                    // The program closed it and the number is one of its own descriptors now.
                    core::mem::forget(fd);
                }
            }
        }
    }
}
